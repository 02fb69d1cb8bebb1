package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/store"
)

// DiscloseStream stores the chunks of one stream as one disclose: appends,
// idempotency keys (shared with the unary call) and request work as in
// Disclose; bad streams store nothing.
func TestDiscloseStream(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	chunk := func(n int) *batchv1.DiscloseStreamRequest { return &batchv1.DiscloseStreamRequest{Tasks: echo(n)} }

	first := &batchv1.DiscloseStreamRequest{Name: "streamed", IdempotencyKey: "k1", Tasks: echo(3)}
	res := must[*batchv1.DiscloseStreamResponse](t)(discloseStream(ctx(t), b.tasks, first, chunk(4), chunk(5)))
	if res.Count != 12 || res.FirstIndex != 0 || res.Replayed || res.TaskSet.Name != "streamed" || res.TaskSet.Counts.Disclosed != 12 {
		t.Fatalf("first stream: %v", res)
	}
	id := res.TaskSet.Id
	t.Run("Specs", func(t *testing.T) {
		mixed := []*batchv1.TaskSpec{{Argv: []string{"a"}, Dir: "/d1"}, {Argv: []string{"", "x"}[1:], Env: map[string]string{"K": "v"}},
			{Argv: []string{"sh", "-c", "echo hi"}, Dir: "/d3", EstimateSeconds: 3}, {Argv: []string{"z", ""}}}
		r := must[*batchv1.DiscloseStreamResponse](t)(discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Tasks: mixed[:2]},
			&batchv1.DiscloseStreamRequest{Tasks: mixed[2:]}))
		got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: r.TaskSet.Id}))
		if len(got.Tasks) != len(mixed) {
			t.Fatalf("%d tasks, want %d", len(got.Tasks), len(mixed))
		}
		for i, task := range got.Tasks {
			if !proto.Equal(task.Spec, mixed[i]) {
				t.Errorf("task %d: spec %v, want %v", i, task.Spec, mixed[i])
			}
		}
		must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: r.TaskSet.Id, All: true}))
	})
	t.Run("ReplayStream", func(t *testing.T) {
		again := must[*batchv1.DiscloseStreamResponse](t)(discloseStream(ctx(t), b.tasks, first, chunk(4), chunk(5)))
		if !again.Replayed || again.TaskSet.Id != id || again.Count != 12 || again.TaskSet.Counts.Total != 12 {
			t.Fatalf("replay: %v", again)
		}
	})
	t.Run("ReplayUnary", func(t *testing.T) {
		// The same content in one message is the same disclose.
		same := append(append(echo(3), chunk(4).Tasks...), chunk(5).Tasks...)
		again := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "streamed", IdempotencyKey: "k1", Tasks: same}))
		if !again.Replayed || again.TaskSet.Id != id {
			t.Fatalf("unary replay of a streamed key: %v", again)
		}
		// Other tasks under the same key are not a replay.
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "streamed", IdempotencyKey: "k1", Tasks: echo(12)})
		wantCode(t, err, connect.CodeAlreadyExists)
	})
	t.Run("AppendRequested", func(t *testing.T) {
		more := must[*batchv1.DiscloseStreamResponse](t)(discloseStream(ctx(t), b.tasks,
			&batchv1.DiscloseStreamRequest{SetId: id, Request: true, Tasks: echo(2)}, chunk(1)))
		if more.TaskSet.Id != id || more.FirstIndex != 12 || more.Count != 3 || more.TaskSet.Counts.Requested != 3 {
			t.Fatalf("append: %v", more)
		}
	})
	for _, tc := range []struct {
		name  string
		first *batchv1.DiscloseStreamRequest
		more  []*batchv1.DiscloseStreamRequest
		want  connect.Code
	}{
		{"ErrNoTasks", &batchv1.DiscloseStreamRequest{Name: "empty"}, nil, connect.CodeInvalidArgument},
		{"ErrNameInLaterChunk", chunk(1), []*batchv1.DiscloseStreamRequest{{Name: "late", Tasks: echo(1)}}, connect.CodeInvalidArgument},
		{"ErrEmptyArgvInLaterChunk", chunk(1), []*batchv1.DiscloseStreamRequest{{Tasks: []*batchv1.TaskSpec{{}}}}, connect.CodeInvalidArgument},
		{"ErrNoSuchSet", &batchv1.DiscloseStreamRequest{SetId: id + 100, Tasks: echo(1)}, nil, connect.CodeNotFound},
		{"ErrTooManyTasks", chunk(store.MaxTasksPerCall / 2), []*batchv1.DiscloseStreamRequest{chunk(store.MaxTasksPerCall/2 + 1)}, connect.CodeResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := discloseStream(ctx(t), b.tasks, tc.first, tc.more...)
			wantCode(t, err, tc.want)
		})
	}
	list := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 2 || list.TaskSets[1].Id != id || list.TaskSets[1].Counts.Total != 15 {
		t.Fatalf("after the refused streams: %v, want set %d of 15 tasks and the specs' set", list.TaskSets, id)
	}
}

// A stream cut before the client closes it stores nothing (the same key
// then discloses afresh), and while a stream is open other discloses go
// through: the server holds no lock during the upload.
func TestDiscloseStreamCut(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	// Serve the handler once more, telling when a DiscloseStream call has
	// ended on the server.
	ended := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.srv.Handler().ServeHTTP(w, r)
		if r.URL.Path == batchv1connect.TaskSetServiceDiscloseStreamProcedure {
			ended <- struct{}{}
		}
	}))
	t.Cleanup(hs.Close)
	c := newTaskClient(hs.Client(), hs.URL, adminToken(t, b.dir))

	sctx, cut := context.WithCancel(ctx(t))
	st, err := c.DiscloseStream(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&batchv1.DiscloseStreamRequest{Name: "cut", IdempotencyKey: "k", Tasks: echo(1000)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&batchv1.DiscloseStreamRequest{Tasks: echo(1000)}); err != nil {
		t.Fatal(err)
	}
	// The stream is open: a unary disclose is not held up by it.
	must[*batchv1.DiscloseResponse](t)(c.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "meanwhile", Tasks: echo(1)}))
	cut()
	// The server ends the call on the cut before the client closes its
	// side: a close sent first could race the cut's reset and end the
	// upload cleanly.
	<-ended
	_, err = st.CloseAndReceive()
	wantCode(t, err, connect.CodeCanceled)

	list := must[*batchv1.ListTaskSetsResponse](t)(c.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 1 || list.TaskSets[0].Name != "meanwhile" {
		t.Fatalf("sets after the cut stream: %v, want only the unary one", list.TaskSets)
	}
	res := must[*batchv1.DiscloseStreamResponse](t)(discloseStream(ctx(t), c, &batchv1.DiscloseStreamRequest{Name: "cut", IdempotencyKey: "k", Tasks: echo(5)}))
	if res.Replayed || res.Count != 5 {
		t.Fatalf("the cut stream's key: %v, want a fresh disclose", res)
	}
}
