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
	// The pilot's end, brought forward to its hand-back, and its mode
	// are kept for a restart.
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range snap.Workers {
		if w.ID == "pilot" && (w.EndsAt.IsZero() || w.EndsAt.After(*now) || !w.HandBack) {
			t.Errorf("loaded pilot: ends %v hand-back %v, want a hand-back's time (by %v) and true", w.EndsAt, w.HandBack, *now)
		}
	}
}

// Only a copy a pilot started counts as lost to its end: a copy live on it
// that its goodbye does not hold, or that it never reports, was never
// started there and queues again without a count. A hand-back counts, and
// marks the pilot stopping (its end is now) until it registers again.
func TestPilotLossesOnlyStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	db.SetPilotLossLimit(1)
	end := t0.Add(time.Hour)
	up := func(slots int32, stopping bool) {
		t.Helper()
		if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "pilot", Slots: slots, HandBack: true, EndsAt: end,
			Stopping: stopping}); err != nil {
			t.Fatal(err)
		}
	}
	up(1, false)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	wantState := func(when string, want sched.TaskState) {
		t.Helper()
		_, tk, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set})
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != want {
			t.Fatalf("%s: task %s (%q), want %s", when, tk.State, tk.FailReason, want)
		}
	}
	pilotEnd := func() time.Time {
		t.Helper()
		snap, err := db.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range snap.Workers {
			if w.ID == "pilot" {
				return w.EndsAt
			}
		}
		t.Fatal("pilot not loaded")
		return time.Time{}
	}

	start(t, db, 1, set, 0, "pilot")
	*now = now.Add(time.Second)
	up(0, true) // the goodbye, not holding copy 1
	wantState("a copy the goodbye does not hold", sched.TaskRequested)

	up(1, false)
	start(t, db, 2, set, 0, "pilot")
	*now = now.Add(time.Second)
	if lost, err := db.LoseCopies(ctx, "pilot", []sched.CopyID{2}); err != nil || len(lost) != 1 {
		t.Fatalf("LoseCopies: %v, %v", lost, err)
	}
	wantState("a copy its worker never reported", sched.TaskRequested)
	if got := pilotEnd(); !got.Equal(end) {
		t.Fatalf("pilot's end %v before any hand-back, want %v", got, end)
	}

	start(t, db, 3, set, 0, "pilot")
	*now = now.Add(time.Second)
	f := finish(t, db, store.FinishInput{Worker: "pilot", Copy: 3, Killed: true, RunSeconds: 1})
	if !f.Lost || !f.PilotStopping || !f.PilotFailed {
		t.Fatalf("hand-back: %+v, want lost, the pilot stopping and the task failed", f)
	}
	wantState("a hand-back", sched.TaskCanceled)
	if got := pilotEnd(); !got.Equal(*now) {
		t.Fatalf("pilot's end %v after its hand-back, want %v", got, *now)
	}
	up(1, false)
	if got := pilotEnd(); !got.Equal(end) {
		t.Fatalf("pilot's end %v after it registered again, want %v", got, end)
	}
}
