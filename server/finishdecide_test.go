package server_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	batchv1 "batchd/proto/batch/v1"
)

// A copy's end and the decisions that follow it commit together
// (store.FinishThenDecide). When the decisions cannot be recorded the end
// still is, and the task that was to start queues again; when the whole
// transaction is rolled back the report is refused, the scheduler is
// rebuilt from the store, and the worker's report sent again is taken.
func TestFinishThenDecideFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "p", Tasks: echo(3), Request: true})).TaskSet
	b.srv.DispatchOnce()
	st0 := w.start()

	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(b.dir, "batchd.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	state := func(i int) batchv1.TaskState {
		t.Helper()
		got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
		return got.Tasks[i].State
	}

	// The next copy's row cannot be written: the end is recorded anyway.
	exec(`CREATE TRIGGER no_copies BEFORE INSERT ON copies BEGIN SELECT RAISE(ABORT, 'injected'); END`)
	w.won(st0.CopyId, "out0\n")
	if s := state(0); s != batchv1.TaskState_TASK_STATE_FINISHED {
		t.Fatalf("task 0 after its copy won: %v", s)
	}
	if s := state(1); s != batchv1.TaskState_TASK_STATE_REQUESTED {
		t.Fatalf("task 1 whose start could not be recorded: %v, want requested", s)
	}
	exec(`DROP TRIGGER no_copies`)
	b.srv.DispatchOnce()
	st1 := w.start()
	if st1.Index != 1 {
		t.Fatalf("start after the failure: %v", st1)
	}

	// The whole transaction rolls back: the report is refused and nothing
	// of it is kept; the scheduler starts again from the store.
	exec(`CREATE TRIGGER no_copies BEFORE INSERT ON copies BEGIN SELECT RAISE(ROLLBACK, 'injected'); END`)
	if _, err := w.finish(st1.CopyId, "out1\n", 0, 2); err == nil {
		t.Fatal("a report whose transaction rolled back was answered as taken")
	}
	if s := state(1); s != batchv1.TaskState_TASK_STATE_REQUESTED {
		t.Fatalf("task 1 after the rolled-back report: %v, want requested (its copy running)", s)
	}
	exec(`DROP TRIGGER no_copies`)
	w.won(st1.CopyId, "out1\n") // the worker sends it again
	if s := state(1); s != batchv1.TaskState_TASK_STATE_FINISHED {
		t.Fatalf("task 1 after the report was sent again: %v", s)
	}
	st2 := w.start()
	if st2.Index != 2 {
		t.Fatalf("start after the rebuild: %v", st2)
	}
	w.won(st2.CopyId, "out2\n")
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 3 {
		t.Fatalf("bill lines %d, want 3 (each task once)", bill.Totals.Lines)
	}
}
