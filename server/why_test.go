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
