package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// A winner's report of ten times the run the store saw is billed the run
// it saw plus the allowance, and the line keeps the report; the time a
// copy spent suspended on the server's order is not billed, neither for a
// winner nor for a requested task canceled while it ran.
func TestClampRunTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(3), Request: true})
	set := res.Set.ID
	decide := func(kind sched.DecisionKind, id sched.CopyID) {
		t.Helper()
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: kind, Copy: id}}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, db, 1, set, 0, "a")
	start(t, db, 2, set, 1, "a")
	start(t, db, 3, set, 2, "a")
	*now = now.Add(3 * time.Second)
	decide(sched.DecisionSuspend, 2)
	decide(sched.DecisionSuspend, 3)
	*now = now.Add(7 * time.Second)

	t.Run("OK", func(t *testing.T) {
		f, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 100, CPUSeconds: 4})
		want := 10 + store.ClampAllowance(10)
		if err != nil || !f.Clamped || f.RunSeconds != want || f.ReportedRunSeconds != 100 || f.Bill == nil ||
			f.Bill.SlotSeconds != want || f.Bill.ReportedSlotSeconds != 100 || !f.Bill.Clamped || f.Bill.CPUSeconds != 4 {
			t.Fatalf("forged report: %+v %v; want %g s billed", f, err, want)
		}
	})

	*now = now.Add(100 * time.Second) // copies 2 and 3 stay suspended
	decide(sched.DecisionResume, 2)
	decide(sched.DecisionResume, 3)
	*now = now.Add(5 * time.Second) // 3 + 5 s of run each, 107 s of suspension

	t.Run("OKSuspended", func(t *testing.T) {
		f, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 115})
		want := 8 + store.ClampAllowance(8)
		if err != nil || !f.Clamped || f.Bill == nil || f.Bill.SlotSeconds != want {
			t.Fatalf("report counting the suspension: %+v %v; want %g s billed", f, err, want)
		}
		f, err = db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 115})
		if err != nil || !f.Replayed || f.Bill != nil {
			t.Fatalf("replay: %+v %v", f, err)
		}
	})
	t.Run("OKStopped", func(t *testing.T) {
		c, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{2}})
		if err != nil || len(c.Bills) != 1 || c.Bills[0].SlotSeconds != 8 || c.Bills[0].Clamped {
			t.Fatalf("cancel of a running requested task: %+v %v; want 8 s billed", c, err)
		}
	})
}

// A task's copies say when their suspension under way began and how long
// the ended ones lasted; a copy never suspended is left out.
func TestTaskDetailSuspensions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2), Request: true})
	set := res.Set.ID
	decide := func(kind sched.DecisionKind, id sched.CopyID) {
		t.Helper()
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: kind, Copy: id}}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, db, 1, set, 0, "a")
	start(t, db, 2, set, 1, "a")
	*now = now.Add(3 * time.Second)
	decide(sched.DecisionSuspend, 1)
	*now = now.Add(4 * time.Second)
	decide(sched.DecisionResume, 1)
	*now = now.Add(2 * time.Second)
	suspendedAt := *now
	decide(sched.DecisionSuspend, 1)

	_, task, got, err := db.TaskDetail(ctx, "u", sched.TaskRef{Set: set, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Copies) != 1 || task.Index != 0 {
		t.Fatalf("task 0 read with its suspensions: %+v", task)
	}
	if s, ok := got[1]; len(got) != 1 || !ok || !s.Since.Equal(suspendedAt) || s.Seconds != 4 {
		t.Fatalf("suspensions of task 0: %+v, want copy 1 suspended since %v after 4 s suspended before", got, suspendedAt)
	}
	if _, _, got, err := db.TaskDetail(ctx, "u", sched.TaskRef{Set: set, Index: 1}); err != nil || len(got) != 0 {
		t.Fatalf("task 1 was never suspended: %+v %v", got, err)
	}
	if _, _, _, err := db.TaskDetail(ctx, "someone-else", sched.TaskRef{Set: set, Index: 0}); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Fatalf("another user's set: %v, want not found", err)
	}
}
