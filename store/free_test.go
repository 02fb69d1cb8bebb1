package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// Free work is summed in its four parts, each copy in one: a disclosed
// task's winner is executed_unrequested; a copy killed because its task
// was canceled is canceled; a copy that lost a race is speculative_lost; a
// copy lost with its worker (lease lapsed, or killed by the worker on its
// own) is lost_with_worker. A canceled copy and a lost copy are not
// counted as speculative. The report of each copy names its part.
func TestFreeWorkParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	d, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "d", Tasks: echo(2)})
	r, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "r", Tasks: echo(2), Request: true})
	for _, w := range []sched.WorkerID{"a", "b", "c"} {
		if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: w, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, db, 1, d.Set.ID, 0, "a")
	start(t, db, 2, d.Set.ID, 1, "a")
	start(t, db, 3, r.Set.ID, 0, "a")
	start(t, db, 4, r.Set.ID, 0, "b") // its speculative copy
	start(t, db, 5, r.Set.ID, 1, "c")
	*now = now.Add(5 * time.Second)
	finish := func(in store.FinishInput, want sched.FreePart) {
		t.Helper()
		res, err := db.FinishCopy(ctx, in)
		if err != nil || res.Free != want {
			t.Fatalf("report of copy %d: part %q (%v), want %q", in.Copy, res.Free, err, want)
		}
	}
	kill := func(id sched.CopyID) {
		t.Helper()
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: id}}); err != nil {
			t.Fatal(err)
		}
	}
	finish(store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 2}, sched.FreeExecutedUnrequested)
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: d.Set.ID, Indexes: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	kill(2)
	finish(store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 3}, sched.FreeCanceled)
	finish(store.FinishInput{Worker: "a", Copy: 3, RunSeconds: 4}, "")
	kill(4)
	finish(store.FinishInput{Worker: "b", Copy: 4, RunSeconds: 1}, sched.FreeSpeculativeLost)
	if lost, err := db.LoseWorker(ctx, "c", "lease-lapsed"); err != nil || len(lost) != 1 {
		t.Fatalf("lose worker: %v %v", lost, err)
	}
	start(t, db, 6, r.Set.ID, 1, "a")
	*now = now.Add(2 * time.Second)
	finish(store.FinishInput{Worker: "a", Copy: 6, Killed: true, RunSeconds: 2}, sched.FreeLostWithWorker)

	_, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u"})
	want := sched.FreeWork{ExecutedUnrequestedSlotSeconds: 2, CanceledSlotSeconds: 3, SpeculativeLostSlotSeconds: 1, LostWithWorkerSlotSeconds: 5 + 2}
	if err != nil || tot.Free != want || tot.FreeSlotSeconds != want.Total() || tot.BilledSlotSeconds != 4 {
		t.Fatalf("totals %+v (%v), want free %+v and 4 s billed", tot, err, want)
	}
}
