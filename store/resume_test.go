package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// A suspended copy resumes on the slot its resume names, which may not be
// the one it gave up: the store keeps that slot, so that a new stream's
// restatement and a worker's re-registration agree with the scheduler.
func TestResumeMovesSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
	task := sched.TaskRef{Set: res.Set.ID, Index: 0}
	for _, d := range []sched.Decision{
		{Kind: sched.DecisionStart, Copy: 1, Task: task, Slot: sched.SlotRef{Worker: "a", Slot: 1}},
		{Kind: sched.DecisionSuspend, Copy: 1, Task: task, Slot: sched.SlotRef{Worker: "a", Slot: 1}},
		{Kind: sched.DecisionResume, Copy: 1, Task: task, Slot: sched.SlotRef{Worker: "a", Slot: 0}},
	} {
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{d}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := db.WorkerCopies(ctx, "a")
	if err != nil || len(live) != 1 {
		t.Fatalf("worker copies: %+v %v", live, err)
	}
	if c := live[0].Copy; c.Slot.Slot != 0 || c.State != sched.CopyRunning {
		t.Errorf("copy after its resume on slot 0: slot %d, state %v; want slot 0, running", c.Slot.Slot, c.State)
	}
}
