package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// A stop rule fires in the finish's transaction: the set's disclosed and
// requested tasks that still need a run are canceled (a requested one with
// a running copy billed for what it used, as a cancel bills it), the
// triggering task and other executed ones keep their results, and the set
// says which task fired it, across a reopen of the store.
func TestStopRuleFires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(6), Stop: sched.StopRule{OnOutput: "^found"}})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	if res.Set.Stop.OnOutput != "^found" || res.Set.Stopped != nil {
		t.Fatalf("set after disclose: stop %+v, stopped %+v", res.Set.Stop, res.Set.Stopped)
	}
	if _, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: set, Indexes: []int32{2, 3}}); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 3; i++ {
		start(t, db, sched.CopyID(i+1), set, i, "a")
	}
	*now = now.Add(2 * time.Second)
	// Task 0 executes without a match: nothing fires.
	if r := finish(t, db, store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 2, Stdout: []byte("nothing\n")}); r.Stopped != nil {
		t.Fatalf("a result that does not match fired the rule: %+v", r.Stopped)
	}
	r := finish(t, db, store.FinishInput{Worker: "a", Copy: 2, ExitCode: 1, RunSeconds: 2, Stdout: []byte("found it\n")})
	if r.Stopped == nil {
		t.Fatalf("a matching result did not fire the rule")
	}
	f := r.Stopped.Fired
	if f.Task != (sched.TaskRef{Set: set, Index: 1}) || f.Why != "output matched" || f.Canceled != 4 || f.Attempt != 1 {
		t.Fatalf("fired %+v, want task 1, output matched, 4 canceled", f)
	}
	// Task 2 is requested with a running copy: billed for its 2 s.
	if len(r.Stopped.Bills) != 1 || r.Stopped.Bills[0].Task.Index != 2 || r.Stopped.Bills[0].Reason != sched.BillCanceledAfterRequest {
		t.Fatalf("bills %+v, want the stopped requested task 2's line", r.Stopped.Bills)
	}
	got, err := db.GetTaskSet(ctx, "u", set)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Counts; c.Executed != 2 || c.Canceled != 4 || c.Requested != 0 || c.Disclosed != 0 {
		t.Fatalf("counts after the stop %+v, want 2 executed, 4 canceled", c)
	}
	if got.Stopped == nil || got.Stopped.Task.Index != 1 || !got.Stopped.At.Equal(*now) {
		t.Fatalf("set's stop %+v", got.Stopped)
	}
	// The rule fires once: a later match of an appended task does not.
	res2, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: set, Tasks: echo(1)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, db, 4, set, res2.FirstIndex, "a")
	if r := finish(t, db, store.FinishInput{Worker: "a", Copy: 4, Stdout: []byte("found\n")}); r.Stopped != nil {
		t.Fatalf("a fired rule fired again: %+v", r.Stopped)
	}
	// A restart reads the fired rule back.
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap.Sets {
		for _, tk := range s.Tasks {
			if s.Set == set && tk.State != sched.TaskExecuted {
				t.Fatalf("open task %d of the stopped set is %s after a reload", tk.Index, tk.State)
			}
		}
	}
}

// stop-after counts successes; stop-on-exit and on-success fire on their
// results only; a fired rule is not retried by the retry policy.
func TestStopRuleParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		rule  sched.StopRule
		exits []int32 // exit codes of tasks 0, 1, 2 in turn
		fires int     // the result that fires (-1: none)
	}{
		{"OnSuccess", sched.StopRule{OnSuccess: true}, []int32{1, 0, 0}, 1},
		{"OnExit", sched.StopRule{OnExit: []int32{3}}, []int32{0, 1, 3}, 2},
		{"After", sched.StopRule{After: 2}, []int32{0, 1, 0}, 2},
		{"AfterNotReached", sched.StopRule{After: 3}, []int32{0, 1, 0}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, _ := setup(t)
			res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(5), Stop: c.rule,
				Retry: sched.RetryPolicy{Retries: 2, NonZero: true}})
			if err != nil {
				t.Fatal(err)
			}
			for i, code := range c.exits {
				start(t, db, sched.CopyID(i+1), res.Set.ID, int32(i), "a")
				r := finish(t, db, store.FinishInput{Worker: "a", Copy: sched.CopyID(i + 1), ExitCode: code})
				if fired := r.Stopped != nil; fired != (i == c.fires) {
					t.Fatalf("result %d (exit %d): fired %v", i, code, fired)
				}
				if r.Stopped != nil && r.Retried != nil {
					t.Fatalf("the task that fired the rule was retried")
				}
			}
		})
	}
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t)
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Stop: sched.StopRule{OnOutput: "("}})
		code(t, err, sched.EINVALID)
	})
}

// Hold and release persist per task; a reload restores the held ones;
// an update changes the set in place.
func TestHoldAndUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(4)})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	t.Run("ErrNothingNamed", func(t *testing.T) {
		_, err := db.Hold(ctx, store.HoldInput{Owner: "u", SetID: set})
		code(t, err, sched.EINVALID)
	})
	t.Run("ErrOtherOwner", func(t *testing.T) {
		_, err := db.Hold(ctx, store.HoldInput{Owner: "v", SetID: set, All: true})
		code(t, err, sched.ENOTFOUND)
	})
	h, err := db.Hold(ctx, store.HoldInput{Owner: "u", SetID: set, All: true})
	if err != nil || h.Changed != 4 || h.Set.Counts.Held != 4 {
		t.Fatalf("Hold all = %+v, %v; want 4 held", h, err)
	}
	r, err := db.Release(ctx, store.HoldInput{Owner: "u", SetID: set, Indexes: []int32{1, 1, 3}})
	if err != nil || r.Changed != 2 || r.Set.Counts.Held != 2 || len(r.Indexes) != 2 {
		t.Fatalf("Release 1, 3 = %+v, %v; want 2 released", r, err)
	}
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var held []int32
	for _, s := range snap.Sets {
		for _, tk := range s.Tasks {
			if tk.Held {
				held = append(held, tk.Index)
			}
		}
	}
	if len(held) != 2 || held[0] != 0 || held[1] != 2 {
		t.Fatalf("held after a reload: %v, want [0 2]", held)
	}
	_, ts, err := db.GetTasks(ctx, "u", set, []int32{0, 1})
	if err != nil || !ts[0].Held || ts[1].Held {
		t.Fatalf("GetTasks: %+v, %v; want task 0 held, 1 not", ts, err)
	}

	t.Run("ErrNothingToChange", func(t *testing.T) {
		_, err := db.UpdateSet(ctx, store.UpdateInput{Owner: "u", SetID: set})
		code(t, err, sched.EINVALID)
	})
	t.Run("ErrBadRule", func(t *testing.T) {
		_, err := db.UpdateSet(ctx, store.UpdateInput{Owner: "u", SetID: set, Stop: &sched.StopRule{OnOutput: "["}})
		code(t, err, sched.EINVALID)
	})
	mr, timeout := int32(3), 7.5
	got, err := db.UpdateSet(ctx, store.UpdateInput{Owner: "u", SetID: set, MaxRunning: &mr, TimeoutSeconds: &timeout,
		Retry: &sched.RetryPolicy{Retries: 1, Timeout: true}, Stop: &sched.StopRule{After: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxRunning != 3 || got.TimeoutSeconds != 7.5 || got.Retry.Retries != 1 || !got.Retry.Timeout || got.Stop.After != 2 {
		t.Fatalf("set after update %+v", got)
	}
	// The new timeout reaches the copies started from now on.
	started, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 1, Task: sched.TaskRef{Set: set, Index: 1}, Slot: sched.SlotRef{Worker: "a"}}})
	if err != nil || len(started) != 1 || started[0].Spec.TimeoutSeconds != 7.5 {
		t.Fatalf("started %+v, %v; want the set's timeout 7.5", started, err)
	}
}

// A held task that is canceled and retried comes back held, and says so
// to the scheduler.
func TestHeldAcrossRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(2)})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	if _, err := db.Hold(ctx, store.HoldInput{Owner: "u", SetID: set, Indexes: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	r, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Retried) != 2 || !r.Retried[0].Held || r.Retried[1].Held || r.Set.Counts.Held != 1 {
		t.Fatalf("retried %+v, held %d; want task 0 alone held", r.Retried, r.Set.Counts.Held)
	}
}
