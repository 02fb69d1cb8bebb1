package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// openWatchReq is openWatch (taskset_test.go) with the whole request:
// its filter too.
func openWatchReq(t *testing.T, b *bundle, req *batchv1.WatchTaskSetRequest) func() *batchv1.WatchTaskSetResponse {
	t.Helper()
	stream, err := b.tasks.WatchTaskSet(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Close() })
	return func() *batchv1.WatchTaskSetResponse {
		t.Helper()
		if !stream.Receive() {
			t.Fatalf("watch ended: %v", stream.Err())
		}
		return stream.Msg()
	}
}

// A summary-only watch carries the set's counts and never a task, from
// the snapshot on; the counts move as tasks start and finish.
func TestWatchSummaryOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(3)})).TaskSet
	recv := openWatchReq(t, b, &batchv1.WatchTaskSetRequest{SetId: set.Id, SummaryOnly: true})
	check := func(m *batchv1.WatchTaskSetResponse) *batchv1.WatchTaskSetResponse {
		t.Helper()
		if len(m.Tasks) != 0 || m.TaskSet.GetId() != set.Id {
			t.Fatalf("summary-only message with %d tasks, set %d: %v", len(m.Tasks), m.TaskSet.GetId(), m)
		}
		return m
	}
	if m := check(recv()); !m.Snapshot || m.TaskSet.Counts.Disclosed != 3 {
		t.Fatalf("snapshot: %v", m)
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, All: true}))
	w, _ := b.worker(t, "w", 1)
	for done := int64(0); done < 3; done++ {
		st := w.start()
		for m := check(recv()); m.TaskSet.Counts.Running != 1; m = check(recv()) {
		}
		w.won(st.CopyId, "x")
		for m := check(recv()); m.TaskSet.Counts.Finished != done+1; m = check(recv()) {
			if m.Snapshot {
				t.Fatalf("a second snapshot: %v", m)
			}
		}
	}
}

// A watch of named tasks carries only those, in its snapshot and after;
// a change to another task sends nothing of it.
func TestWatchNamedTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(5)})).TaskSet
	recv := openWatchReq(t, b, &batchv1.WatchTaskSetRequest{SetId: set.Id, Indexes: []int32{3, 1, 3, 9}}) // 9: not in the set
	only := func(m *batchv1.WatchTaskSetResponse) *batchv1.WatchTaskSetResponse {
		t.Helper()
		for _, x := range m.Tasks {
			if x.Index != 1 && x.Index != 3 {
				t.Fatalf("task %d in a watch of 1 and 3: %v", x.Index, m)
			}
		}
		return m
	}
	if m := only(recv()); !m.Snapshot || len(m.Tasks) != 2 || m.Tasks[0].Index != 1 || m.Tasks[1].Index != 3 {
		t.Fatalf("snapshot: %v, want tasks 1 and 3", m)
	}
	// 0, 2 and 4 change first: a message for them would come before 3's.
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0, 2, 4}}))
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{3}}))
	m := only(recv())
	if m.Snapshot || len(m.Tasks) != 1 || m.Tasks[0].Index != 3 || m.Tasks[0].State != batchv1.TaskState_TASK_STATE_REQUESTED || m.TaskSet.Counts.Requested != 4 {
		t.Fatalf("change: %v, want task 3 requested and 4 requested in the counts", m)
	}
	// A whole-set change (cancel all) sends the watched tasks, no others.
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, All: true}))
	for m = only(recv()); m.TaskSet.Counts.Canceled != 5; m = only(recv()) {
	}
}

// Indexes out of range and too many are refused.
func TestWatchNamedTasksInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	s, err := b.tasks.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: set.Id, Indexes: []int32{-1}})
	if err == nil {
		for s.Receive() {
		}
		err = s.Err()
	}
	wantCode(t, err, connect.CodeInvalidArgument)
}
