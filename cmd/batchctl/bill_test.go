package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"batchd/sched"
	"batchd/server"
	"batchd/store"
)

// ledgerEnv writes a ledger straight into a data directory on a pinned
// clock, then serves it: admin's set "d" has a task executed and never
// requested (2 s) and one canceled while its copy ran (3 s); set "r" has a
// task finished by a worker that reported 100 s after 10 s (billed 10 s
// plus the allowance), its losing speculative copy (1 s), and a task whose
// copy was lost with its worker (5 s).
func ledgerEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	db := store.NewDB(filepath.Join(data, "batchd.db"))
	db.Now = func() time.Time { return now }
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	echo := func(n int) []sched.TaskSpec {
		out := make([]sched.TaskSpec, n)
		for i := range out {
			out[i] = sched.TaskSpec{Argv: []string{"echo"}}
		}
		return out
	}
	d, err := db.Disclose(ctx, store.DiscloseInput{Owner: "admin", Name: "d", Tasks: echo(2)})
	must(err)
	r, err := db.Disclose(ctx, store.DiscloseInput{Owner: "admin", Name: "r", Tasks: echo(2), Request: true})
	must(err)
	for _, w := range []sched.WorkerID{"a", "b"} {
		_, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: w, Slots: 4})
		must(err)
	}
	start := func(id sched.CopyID, set sched.SetID, idx int32, w sched.WorkerID) {
		_, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: id, Task: sched.TaskRef{Set: set, Index: idx}, Slot: sched.SlotRef{Worker: w}}})
		must(err)
	}
	finish := func(in store.FinishInput) {
		_, err := db.FinishCopy(ctx, in)
		must(err)
	}
	start(1, d.Set.ID, 0, "a")
	start(2, d.Set.ID, 1, "a")
	start(3, r.Set.ID, 0, "a")
	start(4, r.Set.ID, 0, "a")
	start(5, r.Set.ID, 1, "b")
	now = now.Add(10 * time.Second)
	finish(store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 2})
	_, err = db.Cancel(ctx, store.CancelInput{Owner: "admin", SetID: d.Set.ID, Indexes: []int32{1}})
	must(err)
	_, err = db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 2}})
	must(err)
	finish(store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 3})
	finish(store.FinishInput{Worker: "a", Copy: 3, RunSeconds: 100, CPUSeconds: 1})
	_, err = db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 4}})
	must(err)
	finish(store.FinishInput{Worker: "a", Copy: 4, RunSeconds: 1})
	now = now.Add(-5 * time.Second) // copy 5 is lost 5 s after its start
	_, err = db.LoseWorker(ctx, "b", "gone")
	must(err)
	must(db.Close())

	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: data, TickInterval: -1})
	must(err)
	must(srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	return &env{t: t, url: srv.URL(), data: data, srv: srv}
}

// batchctl bill shows free work in its four parts under DESIGN.md's names,
// each with its own seconds (the canceled copy and the copy lost with its
// worker are not speculative), and a clamped line with what its worker
// reported.
func TestBillFreePartsAndClamp(t *testing.T) {
	e := ledgerEnv(t)
	out := e.ok("bill", "--lines")
	allowance := store.ClampAllowance(10)
	q := func(v float64) string { return regexp.QuoteMeta(secs(v)) }
	for _, re := range []string{
		`\| free: executed but never requested +\| ` + q(2) + ` +\|`,
		`\| free: losing speculative copies +\| ` + q(1) + ` +\|`,
		`\| free: canceled +\| ` + q(3) + ` +\|`,
		`\| free: lost with a worker +\| ` + q(5) + ` +\|`,
		`\| free: total +\| ` + q(11) + ` +\|`,
		`\| billed \(requested work\) +\| ` + regexp.QuoteMeta(secs(10+allowance)) + ` +\|`,
		`\| ` + regexp.QuoteMeta(secs(10+allowance)) + ` +\| ` + regexp.QuoteMeta(secs(100)) + ` \(cut\) +\|`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("bill --lines printed\n%s\nwant it to match %s", out, re)
		}
	}
	var b struct {
		Totals struct {
			Free map[string]float64 `json:"free"`
		} `json:"totals"`
		Lines []struct {
			SlotSeconds         float64 `json:"slot_seconds"`
			ReportedSlotSeconds float64 `json:"reported_slot_seconds"`
			Clamped             bool    `json:"clamped"`
		} `json:"lines"`
	}
	e.json(&b, "bill")
	want := map[string]float64{"executed_unrequested_slot_seconds": 2, "speculative_lost_slot_seconds": 1,
		"canceled_slot_seconds": 3, "lost_with_worker_slot_seconds": 5}
	if len(b.Totals.Free) != len(want) {
		t.Errorf("bill --json free = %v, want %v", b.Totals.Free, want)
	}
	for k, v := range want {
		if b.Totals.Free[k] != v {
			t.Errorf("bill --json free = %v, want %v", b.Totals.Free, want)
		}
	}
	if len(b.Lines) != 1 || !b.Lines[0].Clamped || b.Lines[0].ReportedSlotSeconds != 100 || b.Lines[0].SlotSeconds != 10+allowance {
		t.Errorf("bill --json lines = %+v, want one clamped from 100 s", b.Lines)
	}
}

// batchctl cluster names the four parts of free work as batchctl bill
// does, in text and JSON.
func TestClusterFreeParts(t *testing.T) {
	e := ledgerEnv(t)
	out := e.ok("cluster")
	for _, p := range sched.FreeParts {
		if !strings.Contains(out, "| free: "+p.Label()+" ") {
			t.Errorf("cluster printed\n%s\nwithout free: %s", out, p.Label())
		}
	}
	var c struct {
		Metrics struct {
			Free map[string]float64 `json:"free"`
		} `json:"metrics"`
	}
	e.json(&c, "cluster")
	for _, p := range sched.FreeParts {
		if _, ok := c.Metrics.Free[string(p)+"_slot_seconds"]; !ok || len(c.Metrics.Free) != 4 {
			t.Errorf("cluster --json free = %v, want the four parts", c.Metrics.Free)
		}
	}
}
