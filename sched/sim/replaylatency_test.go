package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// TestReplayLatencyAt: each copy holds its slot for its run plus the
// latency of its start's moment, and its result comes that much later.
func TestReplayLatencyAt(t *testing.T) {
	t.Parallel()
	tr := threeOnOneSlot()
	// 0.5 s for copies started before t = 12, 0.25 s after.
	at := func(t float64) float64 {
		if t < 12 {
			return 0.5
		}
		return 0.25
	}
	r, err := Replay(context.Background(), tr, sched.Config{Policy: sched.PolicyFCFSxFCFS, Speculation: sched.SpecNone},
		ReplayOptions{KeepJobs: true, LatencyAt: at, Latency: 9})
	if err != nil {
		t.Fatal(err)
	}
	// Job 0 starts at 10 (3 + 0.5), job 1 at 13.5 (1 + 0.25), job 2 at
	// 14.75 (2 + 0.25): LatencyAt wins over Latency.
	ends := []float64{13.5, 14.75, 17}
	checkEnds(t, r, ends)
}

// TestReplayReportRunTime: when a copy's end reports its run time without
// its latency, the replay's scheduler learns the latency and, as a live
// one, speculates later and less (sched/lag.go); without the report it
// cannot tell latency from run time.
func TestReplayReportRunTime(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecGRASS}
	lat := func(float64) float64 { return 2 }
	quiet, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 1, LatencyAt: lat})
	if err != nil {
		t.Fatal(err)
	}
	told, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 1, LatencyAt: lat, ReportRunTime: true})
	if err != nil {
		t.Fatal(err)
	}
	if quiet.SpeculativeStarted == 0 || told.SpeculativeStarted >= quiet.SpeculativeStarted {
		t.Fatalf("speculative copies: %d with run times reported, %d without; want fewer with", told.SpeculativeStarted, quiet.SpeculativeStarted)
	}
	if told.Requests != quiet.Requests {
		t.Fatalf("requests %d and %d", told.Requests, quiet.Requests)
	}
}

// threeOnOneSlot is a trace of one worker with one slot and three
// one-task jobs requested at 10 s, 1 ms apart, whose copies run 3, 1 and
// 2 s.
func threeOnOneSlot() *sched.Trace {
	tr := &sched.Trace{Start: 0, Workers: []sched.TraceWorker{{ID: "a", Slots: 1}}}
	for j, d := range []float64{3, 1, 2} {
		tr.Sets = append(tr.Sets, sched.TraceSet{ID: sched.SetID(j + 1), Owner: "u", Tasks: []sched.TraceTask{{DisclosedAt: 10, RequestedAt: 10 + float64(j)*1e-3, Copies: []float64{d}}}})
	}
	return tr
}

// checkEnds fails unless threeOnOneSlot's job j ended at ends[j].
func checkEnds(t *testing.T, r Result, ends []float64) {
	t.Helper()
	for j, jr := range r.Jobs {
		if want := ends[j] - 10 - float64(j)*1e-3; math.Abs(jr.Response-want) > 1e-9 {
			t.Fatalf("job %d: response %g, want %g", j, jr.Response, want)
		}
	}
}
