package store_test

import (
	"context"
	"slices"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// runTask starts copy id of task set/idx on worker "a" and finishes it
// with exit.
func runTask(t *testing.T, db *store.DB, id sched.CopyID, set sched.SetID, idx int32, exit int32) {
	t.Helper()
	start(t, db, id, set, idx, "a")
	if _, err := db.FinishCopy(context.Background(), store.FinishInput{Worker: "a", Copy: id, ExitCode: exit, RunSeconds: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	whole := func(id sched.SetID, any bool) sched.Dependency {
		return sched.Dependency{Set: id, Index: sched.WholeSet, Any: any}
	}
	t.Run("OK", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2), Request: true})
		b, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(3), Request: true, After: []sched.Dependency{whole(a.Set.ID, false)}})
		if err != nil {
			t.Fatal(err)
		}
		if !b.Set.Waiting || b.Set.State != sched.SetWaiting {
			t.Fatalf("b: waiting %v, state %s, want waiting", b.Set.Waiting, b.Set.State)
		}
		// The restart snapshot keeps it waiting, with what it waits for.
		snap, err := db.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(snap.Sets, func(s store.SetSnapshot) bool { return s.Set == b.Set.ID }); i < 0 || !snap.Sets[i].Waiting ||
			!slices.Equal(snap.Sets[i].After, []sched.Dependency{whole(a.Set.ID, false)}) {
			t.Fatalf("snapshot of b: %+v", snap.Sets)
		}
		res, err := db.ResolveDependencies(ctx, nil)
		if err != nil || len(res) != 0 {
			t.Fatalf("while a runs: %+v, %v", res, err)
		}
		runTask(t, db, 1, a.Set.ID, 0, 0)
		deps, waiting, err := db.GetDependencies(ctx, "u", b.Set.ID)
		if err != nil || !waiting || len(deps) != 1 || deps[0].Left != 1 || deps[0].Total != 2 || deps[0].Outcome != sched.OutcomePending {
			t.Fatalf("GetDependencies: %+v %v %v", deps, waiting, err)
		}
		runTask(t, db, 2, a.Set.ID, 1, 0)
		res, err = db.ResolveDependencies(ctx, []sched.SetID{a.Set.ID})
		if err != nil || len(res) != 1 || res[0].Set != b.Set.ID || res[0].Verdict != sched.VerdictRelease {
			t.Fatalf("after a: %+v, %v", res, err)
		}
		got, _ := db.GetTaskSet(ctx, "u", b.Set.ID)
		if got.Waiting || got.State != sched.SetQueued || got.Counts.Requested != 3 {
			t.Fatalf("b released: %+v", got)
		}
	})
	t.Run("OKFailedCancelsChain", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Request: true})
		b, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2), After: []sched.Dependency{whole(a.Set.ID, false)}})
		c, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Request: true, After: []sched.Dependency{whole(b.Set.ID, false)}})
		d, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), After: []sched.Dependency{whole(b.Set.ID, true)}})
		runTask(t, db, 1, a.Set.ID, 0, 3)
		res, err := db.ResolveDependencies(ctx, []sched.SetID{a.Set.ID})
		if err != nil || len(res) != 3 {
			t.Fatalf("resolve: %+v, %v", res, err)
		}
		if res[0].Set != b.Set.ID || res[0].Verdict != sched.VerdictCancel || res[0].Reason != "dependency set 1 failed" || !slices.Equal(res[0].Canceled, []int32{0, 1}) {
			t.Fatalf("b: %+v", res[0])
		}
		if res[1].Set != c.Set.ID || res[1].Verdict != sched.VerdictCancel || res[1].Reason != "dependency set 2 was canceled" {
			t.Fatalf("c: %+v", res[1])
		}
		if res[2].Set != d.Set.ID || res[2].Verdict != sched.VerdictRelease {
			t.Fatalf("d (any): %+v", res[2])
		}
		got, _ := db.GetTaskSet(ctx, "u", c.Set.ID)
		if got.State != sched.SetCanceled || got.CanceledReason != "dependency set 2 was canceled" || got.Counts.Canceled != 1 {
			t.Fatalf("c: %+v", got)
		}
		if a2, _ := db.GetTaskSet(ctx, "u", a.Set.ID); a2.State != sched.SetFailed || a2.Failed != 1 {
			t.Fatalf("a: %+v", a2)
		}
		// No ledger line for tasks that never ran.
		if lines, _, _, err := db.GetBill(ctx, store.BillInput{Owner: "u", IncludeLines: true}); err != nil || len(lines) != 1 {
			t.Fatalf("bill: %d lines, %v; want a's one", len(lines), err)
		}
	})
	t.Run("OKTask", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(3), Request: true})
		b, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), After: []sched.Dependency{{Set: a.Set.ID, Index: 1}}})
		runTask(t, db, 1, a.Set.ID, 0, 0)
		if res, _ := db.ResolveDependencies(ctx, nil); len(res) != 0 {
			t.Fatalf("after task 0: %+v", res)
		}
		runTask(t, db, 2, a.Set.ID, 1, 0)
		if res, _ := db.ResolveDependencies(ctx, nil); len(res) != 1 || res[0].Set != b.Set.ID || res[0].Verdict != sched.VerdictRelease {
			t.Fatalf("after task 1: %+v", res)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "v", Tasks: echo(1), After: []sched.Dependency{whole(a.Set.ID, false)}})
		code(t, err, sched.ENOTFOUND)
		_, err = db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), After: []sched.Dependency{whole(a.Set.ID+100, false)}})
		code(t, err, sched.ENOTFOUND)
		_, err = db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), After: []sched.Dependency{{Set: a.Set.ID, Index: 1}}})
		code(t, err, sched.ENOTFOUND)
		// Nothing of the refused calls stays.
		if sets, _, _ := db.ListTaskSets(ctx, "u", 0, ""); len(sets) != 1 {
			t.Fatalf("%d sets, want 1", len(sets))
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: a.Set.ID, Tasks: echo(1), After: []sched.Dependency{whole(a.Set.ID, false)}})
		code(t, err, sched.EINVALID)
		_, err = db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Labels: []store.Label{{Key: "bad key", Value: "x"}}})
		code(t, err, sched.EINVALID)
	})
	t.Run("OKAllCanceledWhileWaiting", func(t *testing.T) {
		db, _ := setup(t)
		a, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
		b, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2), After: []sched.Dependency{whole(a.Set.ID, false)}})
		if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: b.Set.ID, All: true}); err != nil {
			t.Fatal(err)
		}
		res, err := db.ResolveDependencies(ctx, nil)
		if err != nil || len(res) != 1 || res[0].Verdict != sched.VerdictRelease {
			t.Fatalf("%+v %v", res, err)
		}
		if got, _ := db.GetTaskSet(ctx, "u", b.Set.ID); got.Waiting || got.State != sched.SetCanceled {
			t.Fatalf("%+v", got)
		}
	})
}
