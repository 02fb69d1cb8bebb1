package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// TestMaxRunningAndWhy: a set capped at 2 on a 4-slot worker runs two
// copies; Why says the rest are capped, in line order, and the cap comes
// back with the set. A finished copy lets the next task in.
func TestMaxRunningAndWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 4)
	res := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(5), Request: true, MaxRunning: 2}))
	if got := res.TaskSet.MaxRunning; got != 2 {
		t.Fatalf("max_running in the answer: got %d, want 2", got)
	}
	c1, c2 := w.start(), w.start()
	if c1.Index != 0 || c2.Index != 1 {
		t.Fatalf("started %d and %d, want 0 and 1", c1.Index, c2.Index)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: res.TaskSet.Id, Indexes: []int32{0, 2, 4}}))
	if got := why.Tasks[0].Reason; got != batchv1.WaitReason_WAIT_REASON_RUNNING {
		t.Fatalf("task 0: reason %v, want running", got)
	}
	for k, pos := range map[int]int32{1: 0, 2: 2} {
		tw := why.Tasks[k]
		if tw.Reason != batchv1.WaitReason_WAIT_REASON_MAX_RUNNING || tw.Position != pos || tw.Class != "requested" || tw.MaxRunning != 2 || tw.Running != 2 {
			t.Fatalf("task %d: %v; want capped at position %d", tw.Index, tw, pos)
		}
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: res.TaskSet.Id}))
	if got.TaskSet.MaxRunning != 2 {
		t.Fatalf("GetTaskSet: max_running %d, want 2", got.TaskSet.MaxRunning)
	}
	w.won(c1.CopyId, "a")
	if c3 := w.start(); c3.Index != 2 {
		t.Fatalf("after a finish, started %d, want 2", c3.Index)
	}

	_, err := b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: res.TaskSet.Id, Indexes: []int32{9}})
	wantCode(t, err, connect.CodeNotFound)
	_, err = b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: res.TaskSet.Id})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), MaxRunning: -1})
	wantCode(t, err, connect.CodeInvalidArgument)
}

// TestMaxRunningSurvivesRestart: the cap is stored with the set and
// restored into the scheduler.
func TestMaxRunningSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, options{dir: dir})
	res := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(4), Request: true, MaxRunning: 1}))
	b.close()
	b = setup(t, options{dir: dir})
	w, _ := b.worker(t, "w", 4)
	if c := w.start(); c.Index != 0 {
		t.Fatalf("started %d, want 0", c.Index)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: res.TaskSet.Id, Indexes: []int32{1}}))
	if tw := why.Tasks[0]; tw.Reason != batchv1.WaitReason_WAIT_REASON_MAX_RUNNING || tw.MaxRunning != 1 {
		t.Fatalf("after a restart: %v, want capped at 1", tw)
	}
}

// TestResourceRequests: a worker of 4 slots offering 1 GiB; a 3-cpu task
// and two 768 MiB tasks. The worker gets the 3-cpu task and one memory
// task; Why says the other waits for resources; the cluster shows the
// memory; a bad request is InvalidArgument. After a restart the requests
// are restored: a 2-slot worker gets nothing of a 3-cpu task.
func TestResourceRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, options{dir: dir})
	res, err := b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: 4, MemoryMb: 1024, Hostname: "test"})
	if err != nil || res.WorkerId != "w" {
		t.Fatal(res, err)
	}
	w := &fakeWorker{t: t, b: b, name: "w", got: make(chan *batchv1.AssignmentsResponse, 1000), held: map[int64]bool{}, suspended: map[int64]bool{}}
	w.open()
	tasks := []*batchv1.TaskSpec{{Argv: []string{"a"}, Cpus: 3}, {Argv: []string{"b"}, MemoryMb: 768}, {Argv: []string{"c"}, MemoryMb: 768}}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: tasks, Request: true})).TaskSet
	got := map[int32]bool{w.start().Index: true, w.start().Index: true}
	if !got[0] || !got[1] {
		t.Fatalf("started %v, want tasks 0 and 1", got)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: set.Id, Indexes: []int32{2}}))
	if r := why.Tasks[0].Reason; r != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES {
		t.Fatalf("task 2: reason %v, want waiting for resources", r)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if len(cl.Workers) != 1 || cl.Workers[0].MemoryMb != 1024 || cl.BusySlots != 4 {
		t.Fatalf("cluster: workers %v, busy %d; want w with 1024 MiB and 4 busy slots", cl.Workers, cl.BusySlots)
	}
	for _, bad := range []*batchv1.TaskSpec{{Argv: []string{"x"}, Cpus: -1}, {Argv: []string{"x"}, MemoryMb: -5}} {
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{bad}})
		wantCode(t, err, connect.CodeInvalidArgument)
	}
	_, err = b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "bad", Slots: 1, MemoryMb: -1})
	wantCode(t, err, connect.CodeInvalidArgument)

	// After a restart the task's cpus come back from the store.
	one := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"big"}, Cpus: 3}}, Request: true})).TaskSet
	b.close()
	b = setup(t, options{dir: dir})
	b.worker(t, "small", 2)
	b.srv.DispatchOnce()
	why = must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: one.Id, Indexes: []int32{0}}))
	if r := why.Tasks[0].Reason; r != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES {
		t.Fatalf("after a restart: reason %v, want waiting for resources", r)
	}
}
