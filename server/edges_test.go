package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// A reused idempotency key with other content is refused with
// AlreadyExists (issue 15, finding 3); the same content replays, sent as
// JSON or as binary Protobuf, and after a restart.
func TestIdempotencyKeyOtherContent(t *testing.T) {
	t.Parallel()
	dir, clk := t.TempDir(), newClock()
	b := setup(t, options{dir: dir, clock: clk})
	first := &batchv1.DiscloseRequest{Name: "x", Tasks: echo(3), IdempotencyKey: "k1"}
	res := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), first))
	env := &batchv1.DiscloseRequest{Name: "x", Tasks: echo(3), IdempotencyKey: "k1"}
	env.Tasks[2].Env = map[string]string{"A": "1"}
	for name, req := range map[string]*batchv1.DiscloseRequest{
		"OtherTasks":    {Name: "x", Tasks: echo(4), IdempotencyKey: "k1"},
		"OtherArgv":     {Name: "x", Tasks: specs([]string{"true"}, []string{"true"}, []string{"true"}), IdempotencyKey: "k1"},
		"OtherEnv":      env,
		"OtherName":     {Name: "y", Tasks: echo(3), IdempotencyKey: "k1"},
		"AsAppend":      {SetId: res.TaskSet.Id, Name: "x", Tasks: echo(3), IdempotencyKey: "k1"},
		"WithRequest":   {Name: "x", Tasks: echo(3), IdempotencyKey: "k1", Request: true},
		"OtherEstimate": {Name: "x", Tasks: []*batchv1.TaskSpec{{Argv: echo(1)[0].Argv, EstimateSeconds: 1}, echo(3)[1], echo(3)[2]}, IdempotencyKey: "k1"},
	} {
		_, err := b.tasks.Disclose(ctx(t), req)
		if connect.CodeOf(err) != connect.CodeAlreadyExists {
			t.Errorf("%s: got %v (code %v), want AlreadyExists", name, err, connect.CodeOf(err))
		}
	}
	// Nothing was written by the refused calls.
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: res.TaskSet.Id}))
	if got.TaskSet.Counts.Total != 3 || got.TaskSet.Counts.Requested != 0 {
		t.Fatalf("counts after refused calls: %v", got.TaskSet.Counts)
	}
	list := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 1 {
		t.Fatalf("sets: %d, want 1", len(list.TaskSets))
	}
	// The same content as JSON replays.
	js := batchv1connect.NewTaskSetServiceClient(b.http.Client(), b.http.URL, withToken(adminToken(t, dir)), connect.WithProtoJSON())
	again := must[*batchv1.DiscloseResponse](t)(js.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "x", Tasks: echo(3), IdempotencyKey: "k1"}))
	if !again.Replayed || again.TaskSet.Id != res.TaskSet.Id {
		t.Fatalf("JSON replay: %v", again)
	}
	// And after a restart.
	b.close()
	b = setup(t, options{dir: dir, clock: clk})
	again = must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), first))
	if !again.Replayed || again.TaskSet.Id != res.TaskSet.Id || again.Count != 3 {
		t.Fatalf("replay after restart: %v", again)
	}
	_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "x", Tasks: echo(2), IdempotencyKey: "k1"})
	wantCode(t, err, connect.CodeAlreadyExists)
}
