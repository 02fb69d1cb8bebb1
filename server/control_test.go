package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// A stop rule fires on the result that matches it: the worker is told to
// kill the set's other running copy, the queued tasks are canceled, and
// the set says which task fired it. An expression that does not compile
// is refused at disclose.
func TestStopRule(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w1", 2)
	t.Run("ErrBadExpression", func(t *testing.T) {
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Stop: &batchv1.StopRule{OnOutput: "(("}})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Stop: &batchv1.StopRule{OnExit: []int32{256}}})
		wantCode(t, err, connect.CodeInvalidArgument)
	})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(5),
		Stop: &batchv1.StopRule{OnOutput: `^found \d+`}})).TaskSet
	if set.Stop.GetOnOutput() != `^found \d+` {
		t.Fatalf("set's rule %v", set.Stop)
	}
	b.srv.DispatchOnce()
	a, c := w.start(), w.start()
	b.clock.Advance(2e9)
	if _, err := w.finish(a.CopyId, "found 42\n", 0, 2); err != nil {
		t.Fatal(err)
	}
	if m := w.next(); m.GetKill() != c.CopyId {
		t.Fatalf("after the rule fired: %v, want the kill of copy %d", m, c.CopyId)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id})).TaskSet
	if got.Stopped.GetIndex() != a.Index || got.Stopped.GetWhy() != "output matched" || got.Stopped.GetCanceled() != 4 ||
		got.Counts.Canceled != 4 || got.Counts.Executed != 1 {
		t.Fatalf("set after the stop: %v", got)
	}
	// Nothing else starts: the scheduler dropped the canceled tasks.
	b.srv.DispatchOnce()
	select {
	case m := <-w.got:
		t.Fatalf("after the stop the worker got %v", m)
	default:
	}
}

// A held set starts nothing and Why says held; a release starts it. A
// hold with suspend suspends a running copy, and the release resumes it.
func TestHoldRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2), Request: true})).TaskSet
	t.Run("ErrCalls", func(t *testing.T) {
		_, err := b.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: set.Id})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: 999, All: true})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: set.Id, Indexes: []int32{7}})
		wantCode(t, err, connect.CodeNotFound)
	})
	h := must[*batchv1.HoldTasksResponse](t)(b.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: set.Id, Indexes: []int32{0}}))
	if h.Held != 1 || h.TaskSet.Counts.Held != 1 {
		t.Fatalf("hold: %v", h)
	}
	w, _ := b.worker(t, "w1", 1)
	b.srv.DispatchOnce()
	if s := w.start(); s.Index != 1 {
		t.Fatalf("started task %d, want 1 (0 is held)", s.Index)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: set.Id, Indexes: []int32{0}})).Tasks[0]
	if why.Reason != batchv1.WaitReason_WAIT_REASON_HELD {
		t.Fatalf("why: %v, want held", why)
	}
	// Hold the running task 1 with suspend: its copy is suspended, and
	// the slot stays empty (task 0 is held too).
	h = must[*batchv1.HoldTasksResponse](t)(b.control.HoldTasks(ctx(t), &batchv1.HoldTasksRequest{SetId: set.Id, All: true, Suspend: true}))
	if h.Held != 1 || h.Suspended != 1 {
		t.Fatalf("hold all with suspend: %v", h)
	}
	if m := w.next(); m.GetSuspend() == 0 {
		t.Fatalf("after hold --suspend: %v, want a suspend", m)
	}
	r := must[*batchv1.ReleaseTasksResponse](t)(b.control.ReleaseTasks(ctx(t), &batchv1.ReleaseTasksRequest{SetId: set.Id, Indexes: []int32{1}}))
	if r.Released != 1 || r.TaskSet.Counts.Held != 1 {
		t.Fatalf("release: %v", r)
	}
	b.srv.DispatchOnce()
	if m := w.next(); m.GetResume() == 0 {
		t.Fatalf("after release: %v, want the resume", m)
	}
}

// A set changes in place: UpdateTaskSet, or a disclose that only sets a
// cap.
func TestUpdateTaskSet(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	_, err := b.control.UpdateTaskSet(ctx(t), &batchv1.UpdateTaskSetRequest{SetId: set.Id})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.control.UpdateTaskSet(ctx(t), &batchv1.UpdateTaskSetRequest{SetId: set.Id, Stop: &batchv1.StopRule{OnOutput: "["}})
	wantCode(t, err, connect.CodeInvalidArgument)
	mr, to := int32(4), 30.0
	got := must[*batchv1.UpdateTaskSetResponse](t)(b.control.UpdateTaskSet(ctx(t), &batchv1.UpdateTaskSetRequest{SetId: set.Id,
		MaxRunning: &mr, TimeoutSeconds: &to, Stop: &batchv1.StopRule{OnSuccess: true}})).TaskSet
	if got.MaxRunning != 4 || got.TimeoutSeconds != 30 || !got.Stop.GetOnSuccess() {
		t.Fatalf("after update: %v", got)
	}
	d := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: set.Id, MaxRunning: 2}))
	if d.TaskSet.MaxRunning != 2 || d.Count != 0 {
		t.Fatalf("disclose of a cap alone: %v", d)
	}
}
