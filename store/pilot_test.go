package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// A task whose copies pilots lose at their ends (handed back, or lost with
// the pilot's lease) runs again, for free, until the limit: then it is
// canceled with the reason, not run a fourth time; a worker that is no
// pilot loses copies without a count; a retry starts the count again;
// the pilot's end is kept for a restart.
func TestPilotLosses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	db.SetPilotLossLimit(3)
	end := t0.Add(time.Hour)
	for _, w := range []store.RegisterInput{
		{Worker: "pilot", Slots: 1, HandBack: true, EndsAt: end},
		{Worker: "host", Slots: 1},
	} {
		if _, err := db.RegisterWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	ref := sched.TaskRef{Set: set, Index: 0}
	task := func() sched.Task {
		t.Helper()
		_, tk, err := db.GetTask(ctx, "u", ref)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	id := sched.CopyID(0)
	lose := func(w sched.WorkerID, byLease bool) store.FinishResult {
		t.Helper()
		id++
		start(t, db, id, set, 0, w)
		*now = now.Add(time.Second)
		if byLease {
			if _, err := db.LoseWorker(ctx, w, "lease-lapsed"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: w, Slots: 1, HandBack: w == "pilot", EndsAt: end}); err != nil {
				t.Fatal(err)
			}
			return store.FinishResult{}
		}
		return finish(t, db, store.FinishInput{Worker: w, Copy: id, Killed: true, RunSeconds: 1})
	}
	// A worker that is no pilot: not counted.
	for range 3 {
		lose("host", false)
	}
	if tk := task(); tk.State != sched.TaskRequested {
		t.Fatalf("after losses on a host: %s, want requested", tk.State)
	}
	if f := lose("pilot", false); f.PilotFailed {
		t.Fatalf("failed after 1 pilot loss")
	}
	lose("pilot", true) // lost with the pilot's lease
	if tk := task(); tk.State != sched.TaskRequested {
		t.Fatalf("after 2 pilot losses: %s, want requested", tk.State)
	}
	if f := lose("pilot", false); !f.PilotFailed || !f.Lost {
		t.Fatalf("third pilot loss: %+v, want the task failed", f)
	}
	tk := task()
	if tk.State != sched.TaskCanceled || !strings.Contains(tk.FailReason, "lost 3 times to pilot ends") {
		t.Fatalf("after 3 pilot losses: %s %q, want canceled with the reason", tk.State, tk.FailReason)
	}
	failed, err := db.FailedForPilots(ctx, []sched.TaskRef{ref, ref})
	if err != nil || len(failed) != 1 || failed[0] != ref {
		t.Fatalf("FailedForPilots = %v, %v", failed, err)
	}
	_, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u"})
	if err != nil || tot.Lines != 0 {
		t.Fatalf("bill %+v %v: lost copies are never billed", tot, err)
	}
	// A retry starts again from no loss.
	if _, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	if tk := task(); tk.State != sched.TaskRequested || tk.FailReason != "" {
		t.Fatalf("after a retry: %s %q", tk.State, tk.FailReason)
	}
	if f := lose("pilot", false); f.PilotFailed {
		t.Fatalf("failed at the first loss after a retry")
	}
	// The pilot's end and mode are kept for a restart.
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range snap.Workers {
		if w.ID == "pilot" && (!w.EndsAt.Equal(end) || !w.HandBack) {
			t.Errorf("loaded pilot: ends %v hand-back %v, want %v true", w.EndsAt, w.HandBack, end)
		}
	}
}
