package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// A set's policy retries exit 3 once, in place: the worker is told to start
// the same index again as attempt 2. A user's Retry of a canceled task does
// the same; a task that did not fail is refused. GetTask shows every
// attempt and copy.
func TestRetryInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2), Request: true,
		Retry: &batchv1.RetryPolicy{Retries: 1, ExitCodes: []int32{3}}})).TaskSet
	if set.Retry.GetRetries() != 1 || len(set.Retry.GetExitCodes()) != 1 {
		t.Fatalf("set's policy %v", set.Retry)
	}
	b.srv.DispatchOnce()

	t.Run("ErrBadPolicy", func(t *testing.T) {
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Retry: &batchv1.RetryPolicy{Retries: 1}})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Retry: &batchv1.RetryPolicy{Retries: 1, ExitCodes: []int32{0}}})
		wantCode(t, err, connect.CodeInvalidArgument)
	})
	t.Run("ErrCalls", func(t *testing.T) {
		_, err := b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, All: true, Indexes: []int32{0}})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: 999, All: true})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, Indexes: []int32{1}}) // requested, not run
		wantCode(t, err, connect.CodeFailedPrecondition)
		_, err = b.tasks.GetTask(ctx(t), &batchv1.GetTaskRequest{SetId: set.Id, Index: 2})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0, Attempt: 2})
		wantCode(t, err, connect.CodeNotFound)
	})

	first := w.start()
	if first.Index != 0 || first.Attempt != 1 {
		t.Fatalf("first start %v", first)
	}
	b.clock.Advance(2e9)
	if _, err := w.finish(first.CopyId, "one\n", 3, 2); err != nil {
		t.Fatal(err)
	}
	again := w.start()
	if again.Index != 0 || again.Attempt != 2 || again.CopyId == first.CopyId {
		t.Fatalf("start after the policy's retry %v, want index 0 attempt 2", again)
	}
	w.won(again.CopyId, "two\n")
	task := must[*batchv1.GetTaskResponse](t)(b.tasks.GetTask(ctx(t), &batchv1.GetTaskRequest{SetId: set.Id, Index: 0})).Task
	if task.Attempt != 2 || task.State != batchv1.TaskState_TASK_STATE_FINISHED || len(task.Attempts) != 1 ||
		task.Attempts[0].ExitCode != 3 || task.Attempts[0].RetriedBy != "policy" || len(task.Copies) != 2 ||
		task.Copies[0].Attempt != 1 || task.Copies[0].ExitCode != 3 || task.Copies[1].Attempt != 2 {
		t.Fatalf("task 0 in detail: %v", task)
	}
	old := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0, Attempt: 1}))
	cur := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0}))
	if string(old.Stdout) != "one\n" || old.Attempt != 1 || string(cur.Stdout) != "two\n" || cur.Attempt != 2 {
		t.Fatalf("outputs: attempt 1 %v, current %v", old, cur)
	}
	_, err := b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, Indexes: []int32{0}})
	wantCode(t, err, connect.CodeFailedPrecondition) // exit 0

	// Task 1 starts now; cancel it (billed for what it used), retry it.
	one := w.start()
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{1}}))
	if m := w.next(); m.GetKill() != one.CopyId {
		t.Fatalf("after cancel: %v", m)
	}
	r := must[*batchv1.RetryResponse](t)(b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, All: true}))
	if len(r.Retried) != 1 || r.Retried[0] != 1 || r.TaskSet.Counts.Requested != 1 {
		t.Fatalf("retry all: %v", r)
	}
	b.srv.DispatchOnce()
	if st := w.start(); st.Index != 1 || st.Attempt != 2 {
		t.Fatalf("start after the user's retry %v", st)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	seen := map[[2]int32]bool{}
	for _, l := range bill.Lines {
		k := [2]int32{l.Index, l.Attempt}
		if seen[k] {
			t.Fatalf("task %d attempt %d billed twice: %v", l.Index, l.Attempt, bill.Lines)
		}
		seen[k] = true
	}
	if len(bill.Lines) != 3 || !seen[[2]int32{0, 1}] || !seen[[2]int32{0, 2}] || !seen[[2]int32{1, 1}] {
		t.Fatalf("bill lines %v", bill.Lines)
	}
}

// A retry survives a restart: the retried task is queued again by the
// rebuilt scheduler and starts as its next attempt, billed once for it.
func TestRetryRestart(t *testing.T) {
	t.Parallel()
	dir, clk := t.TempDir(), newClock()
	b := setup(t, options{dir: dir, clock: clk})
	w, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	b.srv.DispatchOnce()
	st := w.start()
	if _, err := w.finish(st.CopyId, "", 1, 1); err != nil {
		t.Fatal(err)
	}
	must[*batchv1.RetryResponse](t)(b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id, Indexes: []int32{0}}))
	b.close()

	b = setup(t, options{dir: dir, clock: clk})
	w, _ = b.worker(t, "w1", 1)
	b.srv.DispatchOnce()
	again := w.start()
	if again.Index != 0 || again.Attempt != 2 || again.CopyId <= st.CopyId {
		t.Fatalf("after the restart: %v, want index 0 as attempt 2", again)
	}
	w.won(again.CopyId, "ok")
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if len(bill.Lines) != 2 || bill.Lines[0].Attempt != 1 || bill.Lines[1].Attempt != 2 {
		t.Fatalf("bill lines %v, want attempts 1 and 2 once each", bill.Lines)
	}
}
