package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// TestHeartbeatsReported: what a heartbeat carries is the last write
// before the last read, nothing before the first write was read.
func TestHeartbeatsReported(t *testing.T) {
	t.Parallel()
	h := Heartbeats{Every: 1, Poll: 0.25, Step: 0.25}
	for _, c := range []struct{ run, work, want float64 }{
		{0.1, 2, 0},
		{0.3, 2, 0},     // read at 0.25 finds no write yet (the write at 0.25 comes after)
		{0.5, 2, 0.125}, // read at 0.5 finds the write at 0.25
		{0.74, 2, 0.125},
		{1, 2, 0.375}, // read at 1 finds the write at 0.75
		{3, 2, 1},     // capped
		{1, 0, 0},
	} {
		if got := h.reported(c.run, c.work); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("reported(%g, %g) = %g, want %g", c.run, c.work, got, c.want)
		}
	}
	// Writes more often than reads: a read at 0.5 finds the write at 0.4.
	if got := (Heartbeats{Every: 1, Poll: 0.25, Step: 0.1}).reported(0.55, 1); math.Abs(got-0.4) > 1e-12 {
		t.Errorf("step 0.1: reported = %g, want 0.4", got)
	}
}

// TestReplayHeartbeats: a copy's progress reaches the scheduler at its
// worker's heartbeats only, once it has something to report and while it
// changes; the replay ends although heartbeats would go on for ever.
func TestReplayHeartbeats(t *testing.T) {
	t.Parallel()
	tr := &sched.Trace{Start: 0, Workers: []sched.TraceWorker{{ID: "a", Slots: 1}, {ID: "b", Slots: 1}}}
	tr.Sets = []sched.TraceSet{{ID: 1, Owner: "u", Tasks: []sched.TraceTask{{DisclosedAt: 10, RequestedAt: 10, Copies: []float64{10}}}}}
	cfg := sched.Config{Policy: sched.PolicyFCFSxFCFS, Speculation: sched.SpecNone}
	base, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	h := &Heartbeats{Every: 1, Poll: 0.25, Step: 0.25}
	got, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 5, Heartbeats: h})
	if err != nil {
		t.Fatal(err)
	}
	if got.MeanVisibleResponse != base.MeanVisibleResponse {
		t.Fatalf("heartbeats changed the run: %g against %g", got.MeanVisibleResponse, base.MeanVisibleResponse)
	}
	// The copy runs on one worker from t = 10 to 20; that worker's
	// heartbeats come at its phase + k; each one from run 0.5 s on
	// carries a new fraction (it changes every 0.25 s), the last one
	// before the end at most 19.99.
	g := newRNG(5, 11, 0) // worker a: the scheduler fills its slot first
	phase := g.float() * h.Every
	want := 0
	for at := phase; at < 20; at += h.Every {
		if at-10 >= 0.5 {
			want++
		}
	}
	if d := got.Applied - base.Applied; d != int64(want) {
		t.Fatalf("%d progress events applied, want %d (worker phase %.3f)", d, want, phase)
	}

	if _, err := Replay(context.Background(), tr, cfg, ReplayOptions{Heartbeats: &Heartbeats{Every: 1}}); err == nil {
		t.Fatal("heartbeats with zero periods accepted")
	}
}
