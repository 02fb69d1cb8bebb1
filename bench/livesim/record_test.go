package main

import (
	"math"
	"testing"

	"batchd/sched"
)

// TestRecordRoundTrip: a kept record reads back whole, the NaN of a lost
// copy included, and records come back by workload, seed and mode.
func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tr := &sched.Trace{Start: 5, Latency: 0.01, Workers: []sched.TraceWorker{{ID: "w0", Slots: 8}},
		Sets: []sched.TraceSet{{ID: 3, Owner: "admin", Tasks: []sched.TraceTask{{DisclosedAt: 5, RequestedAt: 5, Copies: []float64{math.NaN(), -0.2, 0.7}}}}}}
	recs := []record{
		{Workload: "mixed", Mode: "grass", Seed: 1, Trace: tr},
		{Workload: "cluster", Mode: "none", Seed: 2, Trace: tr},
		{Workload: "cluster", Mode: "grass", Seed: 2, Trace: tr, Keys: map[sched.SetID]string{3: "j0"}, Latencies: []float64{0.01, 0.2}, LatencyAt: []float64{5, 6}},
		{Workload: "cluster", Mode: "none", Seed: 1, Trace: tr},
	}
	for _, r := range recs {
		if err := saveRecord(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range got {
		order = append(order, r.file())
	}
	want := []string{"cluster-none-1.gob", "cluster-grass-2.gob", "cluster-none-2.gob", "mixed-grass-1.gob"}
	if len(order) != len(want) {
		t.Fatalf("records %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("records %v, want %v", order, want)
		}
	}
	g := got[1]
	c := g.Trace.Sets[0].Tasks[0].Copies
	if !math.IsNaN(c[0]) || c[1] != -0.2 || c[2] != 0.7 || g.Keys[3] != "j0" || len(g.LatencyAt) != 2 || g.Trace.Latency != 0.01 {
		t.Fatalf("read back %+v (copies %v)", g, c)
	}
}
