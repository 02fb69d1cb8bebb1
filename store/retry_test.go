package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

func finish(t *testing.T, db *store.DB, in store.FinishInput) store.FinishResult {
	t.Helper()
	res, err := db.FinishCopy(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func charges(t *testing.T, db *store.DB) map[[2]int32]int {
	t.Helper()
	lines, _, _, err := db.GetBill(context.Background(), store.BillInput{Owner: "u", IncludeLines: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]int32]int{}
	for _, l := range lines {
		if l.Kind == sched.BillKindCharge {
			out[[2]int32{l.Task.Index, l.Attempt}]++
		}
	}
	return out
}

// A requested task that failed and one canceled after its request are
// retried in place: same index, attempt 2, requested again. Each requested
// attempt is billed once; the first attempt's output stays readable.
func TestRetryRequested(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(3), Request: true})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	for i := int32(0); i < 3; i++ {
		start(t, db, sched.CopyID(i+1), set, i, "a")
	}
	*now = now.Add(2 * time.Second)
	finish(t, db, store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 2})
	finish(t, db, store.FinishInput{Worker: "a", Copy: 2, ExitCode: 3, RunSeconds: 2, Stdout: []byte("first\n")})
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{2}}); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrNotFailed", func(t *testing.T) {
		_, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}})
		code(t, err, sched.EFAILEDPRECONDITION)
	})
	t.Run("ErrOtherOwner", func(t *testing.T) {
		_, err := db.Retry(ctx, store.RetryInput{Owner: "v", SetID: set, All: true})
		code(t, err, sched.ENOTFOUND)
	})
	r, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Retried) != 2 || r.Retried[0] != (sched.TaskInfo{Index: 1, State: sched.TaskRequested, RequestedAt: float64(now.UnixNano()) / 1e9, EstimateSeconds: 2}) ||
		r.Retried[1].Index != 2 || r.Retried[1].State != sched.TaskRequested {
		t.Fatalf("retried %+v", r.Retried)
	}
	if r.Set.Counts.Requested != 2 || r.Set.Counts.Finished != 1 || r.Set.Counts.Canceled != 0 {
		t.Fatalf("counts after retry %+v", r.Set.Counts)
	}
	_, tk, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set, Index: 1})
	if err != nil || tk.Attempt != 2 || tk.State != sched.TaskRequested || len(tk.Attempts) != 1 ||
		tk.Attempts[0].State != sched.TaskFinished || tk.Attempts[0].ExitCode != 3 || !tk.Attempts[0].HasOutput || tk.Attempts[0].RetriedBy != sched.RetriedByUser {
		t.Fatalf("task 1 after retry: %+v %v", tk, err)
	}
	if len(tk.Copies) != 1 || tk.Copies[0].Attempt != 1 || tk.Copies[0].ExitCode != 3 {
		t.Fatalf("copies of task 1: %+v", tk.Copies)
	}
	_, err = db.GetAttemptOutput(ctx, "u", sched.TaskRef{Set: set, Index: 1}, 0, 0, 0)
	code(t, err, sched.EFAILEDPRECONDITION) // attempt 2 has not run yet
	out, err := db.GetAttemptOutput(ctx, "u", sched.TaskRef{Set: set, Index: 1}, 1, 0, 0)
	if err != nil || string(out.Stdout) != "first\n" || out.ExitCode != 3 || out.Attempt != 1 {
		t.Fatalf("output of attempt 1: %+v %v", out, err)
	}
	_, err = db.GetAttemptOutput(ctx, "u", sched.TaskRef{Set: set, Index: 1}, 3, 0, 0)
	code(t, err, sched.ENOTFOUND)

	start(t, db, 4, set, 1, "a")
	start(t, db, 5, set, 2, "a")
	*now = now.Add(3 * time.Second)
	f := finish(t, db, store.FinishInput{Worker: "a", Copy: 4, RunSeconds: 3, Stdout: []byte("second\n")})
	if !f.Won || f.Bill == nil || f.Bill.Attempt != 2 || f.Task.Attempt != 2 {
		t.Fatalf("finish of attempt 2: %+v", f)
	}
	finish(t, db, store.FinishInput{Worker: "a", Copy: 5, RunSeconds: 3})
	out, err = db.GetAttemptOutput(ctx, "u", sched.TaskRef{Set: set, Index: 1}, 0, 0, 0)
	if err != nil || string(out.Stdout) != "second\n" || out.Attempt != 2 {
		t.Fatalf("output of attempt 2: %+v %v", out, err)
	}
	got := charges(t, db)
	want := map[[2]int32]int{{0, 1}: 1, {1, 1}: 1, {1, 2}: 1, {2, 1}: 1, {2, 2}: 1}
	if len(got) != len(want) {
		t.Fatalf("charges %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("charges %v, want %v", got, want)
		}
	}
	raw, err := sql.Open("sqlite3", db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO bill_lines (owner, set_id, idx, slot_seconds, cpu_seconds, billed_at, reason, attempt) VALUES ('u', ?, 1, 1, 1, 1, 'finished', 2)`, set); err == nil {
		t.Fatal("a second charge of one attempt was accepted")
	}
}

// A disclosed task that executed and failed is retried as disclosed: the
// failed attempt was never requested, so it is free and its output stays
// unreadable; the attempt that is requested is billed once.
func TestRetryDisclosedFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1)})
	set := res.Set.ID
	start(t, db, 1, set, 0, "a")
	*now = now.Add(5 * time.Second)
	finish(t, db, store.FinishInput{Worker: "a", Copy: 1, ExitCode: 1, RunSeconds: 5})
	r, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}})
	if err != nil || len(r.Retried) != 1 || r.Retried[0].State != sched.TaskDisclosed || r.Retried[0].RequestedAt != 0 {
		t.Fatalf("retry: %+v %v", r, err)
	}
	_, err = db.GetAttemptOutput(ctx, "u", sched.TaskRef{Set: set, Index: 0}, 1, 0, 0)
	code(t, err, sched.EFAILEDPRECONDITION)
	start(t, db, 2, set, 0, "a")
	*now = now.Add(2 * time.Second)
	finish(t, db, store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 2})
	rq, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: set, Indexes: []int32{0}})
	if err != nil || len(rq.Bills) != 1 || rq.Bills[0].Attempt != 2 || rq.Bills[0].SlotSeconds != 2 {
		t.Fatalf("request: %+v %v", rq, err)
	}
	_, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u"})
	if err != nil || tot.Lines != 1 || tot.BilledSlotSeconds != 2 || tot.Free.ExecutedUnrequestedSlotSeconds != 5 {
		t.Fatalf("totals %+v %v", tot, err)
	}
}

// The set's policy retries exit 3 and timeouts, twice per task, in the
// finish's own transaction; each requested attempt is billed once; exit 4
// is not retried; an exhausted budget leaves the task finished and failed.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	pol, err := sched.ParseRetryOn("3,timeout")
	if err != nil {
		t.Fatal(err)
	}
	pol.Retries = 2
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(2), Request: true, Retry: pol})
	if err != nil || res.Set.Retry.RetryOn() != "3,timeout" || res.Set.Retry.Retries != 2 {
		t.Fatalf("disclose: %+v %v", res.Set, err)
	}
	set := res.Set.ID
	id := sched.CopyID(0)
	run := func(idx int32, in store.FinishInput) store.FinishResult {
		t.Helper()
		id++
		start(t, db, id, set, idx, "a")
		*now = now.Add(time.Second)
		in.Worker, in.Copy, in.RunSeconds = "a", id, 1
		return finish(t, db, in)
	}
	for n, step := range []struct {
		in      store.FinishInput
		retried bool
	}{
		{store.FinishInput{ExitCode: 3}, true},
		{store.FinishInput{ExitCode: 124, TimedOut: true}, true},
		{store.FinishInput{ExitCode: 3}, false}, // budget spent
	} {
		f := run(0, step.in)
		if !f.Won || (f.Retried != nil) != step.retried || f.Bill == nil || f.Bill.Attempt != int32(n+1) {
			t.Fatalf("attempt %d: %+v", n+1, f)
		}
		if step.retried && (f.Retried.Index != 0 || f.Retried.State != sched.TaskRequested) {
			t.Fatalf("attempt %d retried as %+v", n+1, f.Retried)
		}
	}
	if f := run(1, store.FinishInput{ExitCode: 4}); f.Retried != nil {
		t.Fatalf("exit 4 retried: %+v", f)
	}
	_, tk, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set, Index: 0})
	if err != nil || tk.State != sched.TaskFinished || tk.Attempt != 3 || tk.ExitCode != 3 || len(tk.Attempts) != 2 ||
		!tk.Attempts[1].TimedOut || tk.Attempts[1].RetriedBy != sched.RetriedByPolicy || len(tk.Copies) != 3 || !tk.Copies[1].TimedOut {
		t.Fatalf("task 0: %+v %v", tk, err)
	}
	if got := charges(t, db); len(got) != 4 || got[[2]int32{0, 3}] != 1 || got[[2]int32{1, 1}] != 1 {
		t.Fatalf("charges %v", got)
	}
	// The user may retry past the policy's budget.
	if r, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, Indexes: []int32{0}}); err != nil || len(r.Retried) != 1 {
		t.Fatalf("user retry after the budget: %+v %v", r, err)
	}
	t.Run("ErrBadPolicy", func(t *testing.T) {
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Retry: sched.RetryPolicy{Retries: 1}})
		code(t, err, sched.EINVALID)
		_, err = db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1), Retry: sched.RetryPolicy{Retries: sched.MaxRetries + 1, NonZero: true}})
		code(t, err, sched.EINVALID)
	})
}

// With lost in the policy, a re-run after a copy was lost with its worker
// is a new attempt (free, within the budget); without budget the re-run
// stays in its attempt. Nothing lost is billed.
func TestRetryOnLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true,
		Retry: sched.RetryPolicy{Retries: 1, Lost: true}})
	set := res.Set.ID
	attempt := func() int32 {
		t.Helper()
		_, tk, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set, Index: 0})
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != sched.TaskRequested && tk.State != sched.TaskFinished {
			t.Fatalf("task is %s", tk.State)
		}
		return tk.Attempt
	}
	start(t, db, 1, set, 0, "a")
	*now = now.Add(time.Second)
	if _, err := db.LoseWorker(ctx, "a", "gone"); err != nil {
		t.Fatal(err)
	}
	if a := attempt(); a != 2 {
		t.Fatalf("attempt after the first loss %d, want 2", a)
	}
	start(t, db, 2, set, 0, "b")
	*now = now.Add(time.Second)
	if f := finish(t, db, store.FinishInput{Worker: "b", Copy: 2, Killed: true, RunSeconds: 1}); !f.Lost {
		t.Fatalf("killed by its worker: %+v", f)
	}
	if a := attempt(); a != 2 {
		t.Fatalf("attempt after the budget is spent %d, want 2", a)
	}
	start(t, db, 3, set, 0, "b")
	*now = now.Add(time.Second)
	if f := finish(t, db, store.FinishInput{Worker: "b", Copy: 3, RunSeconds: 1}); !f.Won || f.Bill.Attempt != 2 {
		t.Fatalf("finish %+v", f)
	}
	_, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u"})
	if err != nil || tot.Lines != 1 || tot.BilledSlotSeconds != 1 || tot.Free.LostWithWorkerSlotSeconds != 2 {
		t.Fatalf("totals %+v %v", tot, err)
	}
}

// A replayed finish report of a copy whose failure the policy retried gets
// its first answer: no second charge, no second retry.
func TestRetryPolicyReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true,
		Retry: sched.RetryPolicy{Retries: 3, NonZero: true}})
	set := res.Set.ID
	start(t, db, 1, set, 0, "a")
	*now = now.Add(time.Second)
	in := store.FinishInput{Worker: "a", Copy: 1, ExitCode: 2, RunSeconds: 1}
	first := finish(t, db, in)
	again := finish(t, db, in)
	if first.Retried == nil || !again.Replayed || again.Retried != nil || again.Bill != nil {
		t.Fatalf("first %+v, replay %+v", first, again)
	}
	_, tk, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set, Index: 0})
	if err != nil || tk.Attempt != 2 || len(tk.Attempts) != 1 {
		t.Fatalf("after the replay: %+v %v", tk, err)
	}
	if got := charges(t, db); len(got) != 1 || got[[2]int32{0, 1}] != 1 {
		t.Fatalf("charges %v", got)
	}
}

// A retried task is open again: Load hands it to the scheduler after a
// restart, in the class it went back to.
func TestRetryReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(2), Request: true})
	set := res.Set.ID
	start(t, db, 1, set, 0, "a")
	*now = now.Add(time.Second)
	finish(t, db, store.FinishInput{Worker: "a", Copy: 1, ExitCode: 1, RunSeconds: 1})
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	snap, err := db.Load(ctx)
	if err != nil || len(snap.Sets) != 0 {
		t.Fatalf("before the retry: %+v %v", snap.Sets, err)
	}
	if _, err := db.Retry(ctx, store.RetryInput{Owner: "u", SetID: set, All: true}); err != nil {
		t.Fatal(err)
	}
	snap, err = db.Load(ctx)
	if err != nil || len(snap.Sets) != 1 || len(snap.Sets[0].Tasks) != 2 {
		t.Fatalf("after the retry: %+v %v", snap.Sets, err)
	}
	for _, ti := range snap.Sets[0].Tasks {
		if ti.State != sched.TaskRequested {
			t.Fatalf("task %d reloaded as %q, want requested", ti.Index, ti.State)
		}
	}
}
