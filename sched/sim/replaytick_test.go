package sim

import (
	"context"
	"testing"

	"batchd/sched"
)

// TestReplayTick: with a tick the scheduler runs on the events a server
// acts on and on the tick only: the run still ends (ticks do not keep it
// going), every request is served, and the decisions differ from those
// made after every progress report.
func TestReplayTick(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	tr.ProgressEvery = 0.5
	cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecGRASS}
	every, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 2, KeepJobs: true})
	if err != nil {
		t.Fatal(err)
	}
	ticked, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 2, KeepJobs: true, Tick: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ticked.Requests != every.Requests || ticked.Unfinished != 0 {
		t.Fatalf("ticked: %d requests (%d unfinished), want %d", ticked.Requests, ticked.Unfinished, every.Requests)
	}
	if ticked.Decisions == every.Decisions && ticked.MeanVisibleResponse == every.MeanVisibleResponse {
		t.Fatalf("the tick changed nothing: %d decisions, mean %g", ticked.Decisions, ticked.MeanVisibleResponse)
	}
}
