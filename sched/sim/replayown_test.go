package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// TestReplayOwnLatency: a copy with a latency of its own takes it, before
// LatencyAt's; a copy without one takes LatencyAt's.
func TestReplayOwnLatency(t *testing.T) {
	t.Parallel()
	tr := threeOnOneSlot()
	own := func(set sched.SetID, idx int32, k int) (float64, bool) { return 2, set == 2 && idx == 0 && k == 0 }
	r, err := Replay(context.Background(), tr, sched.Config{Policy: sched.PolicyFCFSxFCFS, Speculation: sched.SpecNone},
		ReplayOptions{KeepJobs: true, OwnLatency: own, LatencyAt: func(float64) float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	// Job 0 ends at 13.5 (3 + 0.5), job 1 at 16.5 (1 + its own 2), job 2
	// at 19 (2 + 0.5).
	ends := []float64{13.5, 16.5, 19}
	checkEnds(t, r, ends)
}

// TestTaskClock: with TaskWork a heartbeat's fraction is of the task's own
// work, counted from its process's start (half the latency, then the
// copy's work beyond its latency and the task's); without it, of the
// whole copy from its start decision.
func TestTaskClock(t *testing.T) {
	t.Parallel()
	tr := &sched.Trace{Sets: []sched.TraceSet{{ID: 7}}}
	c := &rpCopy{work: 2.5, lat: 0.4, k: 1}
	r := &replay{tr: tr}
	if run, work := r.taskClock(c, 1); run != 1 || work != 2.5 {
		t.Fatalf("without TaskWork: %g of %g, want 1 of 2.5", run, work)
	}
	r.o.TaskWork = func(set sched.SetID, idx int32, k int) float64 {
		if set != 7 || k != 1 {
			t.Fatalf("TaskWork asked for set %d copy %d", set, k)
		}
		return 2
	}
	// The task starts 0.2 + (2.5 − 0.4 − 2) = 0.3 s after the decision.
	if run, work := r.taskClock(c, 1); math.Abs(run-0.7) > 1e-12 || work != 2 {
		t.Fatalf("with TaskWork: %g of %g, want 0.7 of 2", run, work)
	}
	if run, _ := r.taskClock(c, 0.1); run != 0 {
		t.Fatalf("before the task started: %g, want 0", run)
	}
}
