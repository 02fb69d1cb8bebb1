package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

func TestDiscloseErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	canceled := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: canceled.Id, All: true}))
	// "Cancel the rest" of a set with a requested task closes it too.
	rest := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: rest.Id, Indexes: []int32{0}}))
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: rest.Id, All: true}))
	// A set of two tasks has room for MaxTasksPerSet-2 more: an array of
	// MaxTasksPerSet-1 does not fit.
	full := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	manyArgs := make([]string, store.MaxArgs+1)
	for i := range manyArgs {
		manyArgs[i] = "x"
	}
	for _, tc := range []struct {
		name string
		req  *batchv1.DiscloseRequest
		want connect.Code
	}{
		{"ErrEmptySet", &batchv1.DiscloseRequest{}, connect.CodeInvalidArgument},
		{"ErrEmptyArgv", &batchv1.DiscloseRequest{Tasks: specs([]string{"true"}, nil)}, connect.CodeInvalidArgument},
		{"ErrEmptyCommand", &batchv1.DiscloseRequest{Tasks: specs([]string{""})}, connect.CodeInvalidArgument},
		{"ErrTooManyArgs", &batchv1.DiscloseRequest{Tasks: specs(manyArgs)}, connect.CodeResourceExhausted},
		{"ErrSpecTooBig", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"},
			Env: map[string]string{"BIG": strings.Repeat("x", store.MaxSpecBytes)}}}}, connect.CodeResourceExhausted},
		{"ErrNegativeEstimate", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, EstimateSeconds: -1}}}, connect.CodeInvalidArgument},
		{"ErrTooManyTasks", &batchv1.DiscloseRequest{Tasks: make([]*batchv1.TaskSpec, store.MaxTasksPerCall+1)}, connect.CodeResourceExhausted},
		{"ErrUnknownSet", &batchv1.DiscloseRequest{SetId: 9999, Tasks: echo(1)}, connect.CodeNotFound},
		{"ErrAppendToCanceled", &batchv1.DiscloseRequest{SetId: canceled.Id, Tasks: echo(1)}, connect.CodeFailedPrecondition},
		{"ErrAppendToCanceledRest", &batchv1.DiscloseRequest{SetId: rest.Id, Tasks: echo(1)}, connect.CodeFailedPrecondition},
		{"ErrArrayAndTasks", &batchv1.DiscloseRequest{Tasks: echo(1), Array: &batchv1.TaskArray{Last: 3, Spec: echo(1)[0]}}, connect.CodeInvalidArgument},
		{"ErrArrayReversed", &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{First: 4, Last: 3, Spec: echo(1)[0]}}, connect.CodeInvalidArgument},
		{"ErrArrayNegativeStep", &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{Last: 3, Step: -1, Spec: echo(1)[0]}}, connect.CodeInvalidArgument},
		{"ErrArrayEmptyArgv", &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{Last: 3, Spec: &batchv1.TaskSpec{}}}, connect.CodeInvalidArgument},
		{"ErrArrayTooBig", &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{Last: store.MaxTasksPerSet, Spec: echo(1)[0]}}, connect.CodeResourceExhausted},
		{"ErrNULInArgv", &batchv1.DiscloseRequest{Tasks: specs([]string{"echo", "a\x00b"})}, connect.CodeInvalidArgument},
		{"ErrNULInDir", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, Dir: "/tmp\x00x"}}}, connect.CodeInvalidArgument},
		{"ErrNULInEnvKey", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, Env: map[string]string{"A\x00B": "1"}}}}, connect.CodeInvalidArgument},
		{"ErrNULInEnvValue", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, Env: map[string]string{"A": "1\x002"}}}}, connect.CodeInvalidArgument},
		{"ErrEqualsInEnvKey", &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, Env: map[string]string{"A=B": "1"}}}}, connect.CodeInvalidArgument},
		{"ErrNULInName", &batchv1.DiscloseRequest{Name: "a\x00b", Tasks: echo(1)}, connect.CodeInvalidArgument},
		{"ErrNULInArray", &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{Last: 3, Spec: &batchv1.TaskSpec{Argv: []string{"sh", "-c", "echo \x00"}}}}, connect.CodeInvalidArgument},
		{"ErrArrayPastSetLimit", &batchv1.DiscloseRequest{SetId: full.Id, Array: &batchv1.TaskArray{Last: store.MaxTasksPerSet - 2, Spec: echo(1)[0]}}, connect.CodeResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.tasks.Disclose(ctx(t), tc.req)
			wantCode(t, err, tc.want)
		})
	}
	// Nothing was half written: still three sets, with two tasks each.
	list := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 3 || list.TaskSets[0].Counts.Total != 2 || list.TaskSets[1].Counts.Total != 2 || list.TaskSets[2].Counts.Total != 2 {
		t.Fatalf("sets: %v", list.TaskSets)
	}
}

func TestDiscloseIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	req := &batchv1.DiscloseRequest{Name: "x", Tasks: echo(3), IdempotencyKey: "k1"}
	first := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), req))
	again := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), req))
	if first.Replayed || !again.Replayed || again.TaskSet.Id != first.TaskSet.Id || again.Count != 3 || again.FirstIndex != 0 {
		t.Fatalf("first %v, again %v", first, again)
	}
	// Appending with a key: replays return the same indexes.
	app := &batchv1.DiscloseRequest{SetId: first.TaskSet.Id, Tasks: echo(2), IdempotencyKey: "k2"}
	a1 := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), app))
	a2 := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), app))
	if a1.FirstIndex != 3 || a2.FirstIndex != 3 || !a2.Replayed || a2.TaskSet.Counts.Total != 5 {
		t.Fatalf("append %v, replay %v", a1, a2)
	}
	list := must[*batchv1.ListTaskSetsResponse](t)(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{}))
	if len(list.TaskSets) != 1 {
		t.Fatalf("sets: %d, want 1", len(list.TaskSets))
	}
}

func TestRequestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(5)})).TaskSet

	t.Run("ErrIndexOutOfRange", func(t *testing.T) {
		_, err := b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{5}})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{5}})
		wantCode(t, err, connect.CodeNotFound)
		// No set holds a negative index: that is invalid, not missing.
		_, err = b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{-1}})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 7})
		wantCode(t, err, connect.CodeNotFound)
	})
	t.Run("ErrUnknownSet", func(t *testing.T) {
		_, err := b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: 777, All: true})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: 777, All: true})
		wantCode(t, err, connect.CodeNotFound)
		_, err = b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: 777})
		wantCode(t, err, connect.CodeNotFound)
	})
	t.Run("ErrNothingNamed", func(t *testing.T) {
		// An empty list never means the whole set: that takes all.
		_, err := b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Retry(ctx(t), &batchv1.RetryRequest{SetId: set.Id})
		wantCode(t, err, connect.CodeInvalidArgument)
	})
	t.Run("ErrNamedAndAll", func(t *testing.T) {
		_, err := b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0}, All: true})
		wantCode(t, err, connect.CodeInvalidArgument)
		_, err = b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{0}, All: true})
		wantCode(t, err, connect.CodeInvalidArgument)
	})
	t.Run("ErrBadPageToken", func(t *testing.T) {
		_, err := b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageToken: "zz"})
		wantCode(t, err, connect.CodeInvalidArgument)
	})

	// Request 0 and 1 (nothing runs: no workers). A named cancel of a
	// requested task that never ran cancels it with no ledger line; a
	// cancel of the set cancels the rest, requested ones included.
	req := must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0, 1, 1}}))
	if req.Requested != 2 || len(req.Tasks) != 2 || req.Tasks[0].State != batchv1.TaskState_TASK_STATE_REQUESTED {
		t.Fatalf("request: %v", req)
	}
	c := must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{0}}))
	if c.Canceled != 1 || c.Stopped != 0 {
		t.Fatalf("named cancel of a requested task that never ran: %v", c)
	}
	c = must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, All: true}))
	if c.Canceled != 4 || c.Unchanged != 0 || c.AlreadyCanceled != 1 || c.TaskSet.Counts.Canceled != 5 {
		t.Fatalf("cancel: %v", c)
	}
	c = must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, All: true}))
	if c.Canceled != 0 || c.AlreadyCanceled != 5 {
		t.Fatalf("cancel twice: %v", c)
	}
	_, err := b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{3}})
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 3})
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0})
	wantCode(t, err, connect.CodeFailedPrecondition)
	c = must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{0, 4}}))
	if c.AlreadyCanceled != 2 || c.Canceled != 0 || c.Stopped != 0 {
		t.Fatalf("named cancel of canceled tasks: %v", c)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 0 {
		t.Fatalf("bill: %v; want no line: nothing ran", bill)
	}
}

// Cancel of a requested task while its copy runs bills the slot time used
// so far; the copy's later finish is discarded and billed nothing more.
func TestCancelRacingFinish(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	st := w.start()
	if _, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: st.CopyId, Progress: -1, CpuSeconds: 2.5}}}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(7 * time.Second)
	c := must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{0}}))
	if c.Stopped != 1 {
		t.Fatalf("cancel: %v", c)
	}
	if k := w.next(); k.GetKill() != st.CopyId {
		t.Fatalf("want kill of %d, got %v", st.CopyId, k)
	}
	res, err := w.finish(st.CopyId, "done", 0, 7)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("finish after cancel: %v %v", res, err)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 1 || bill.Lines[0].SlotSeconds != 7 || bill.Lines[0].CpuSeconds != 2.5 || bill.Lines[0].CopyId != st.CopyId {
		t.Fatalf("bill: %v", bill.Lines)
	}
}

// A request that races a disclosed task's finish: whichever comes first,
// one bill line.
func TestRequestRacingFinish(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 2)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	s0, s1 := w.start(), w.start()
	// Task 0: finish first, then request (executed-then-requested).
	w.won(s0.CopyId, "zero")
	// Task 1: request first, then finish (finished).
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{1}}))
	b.clock.Advance(3 * time.Second)
	w.won(s1.CopyId, "one")
	r := must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, All: true}))
	if r.FinishedAtOnce != 1 {
		t.Fatalf("request: %v", r)
	}
	// Requesting again changes nothing and bills nothing.
	r = must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0, 1}}))
	if r.Unchanged != 2 {
		t.Fatalf("request again: %v", r)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 2 {
		t.Fatalf("bill: %v", bill.Lines)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if got.Tasks[0].VisibleResponseSeconds != 0 || got.Tasks[1].VisibleResponseSeconds != 3 {
		t.Fatalf("visible response: %v, %v", got.Tasks[0].VisibleResponseSeconds, got.Tasks[1].VisibleResponseSeconds)
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 1}))
	if string(out.Stdout) != "one" {
		t.Fatalf("output %q", out.Stdout)
	}
}

// Outputs beyond the cap are cut and marked truncated.
func TestOutputCap(t *testing.T) {
	t.Parallel()
	b := setup(t, options{cap: 10})
	w, reg := b.worker(t, "w", 1)
	if reg.OutputCapBytes != 10 {
		t.Fatalf("cap %d", reg.OutputCapBytes)
	}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	st := w.start()
	w.won(st.CopyId, "0123456789abcdef")
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id}))
	if string(out.Stdout) != "0123456789" || !out.StdoutTruncated || out.StdoutSize != 10 || out.StderrTruncated {
		t.Fatalf("output: %v", out)
	}
	page := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Offset: 4, Limit: 3}))
	if string(page.Stdout) != "456" {
		t.Fatalf("page %q", page.Stdout)
	}
}

// A set of 20,000 tasks discloses, pages, requests and cancels in one call
// each. BenchmarkBigSet times 100,000; a test asserts no time.
func TestBigSet(t *testing.T) {
	if testing.Short() {
		t.Skip("big set")
	}
	t.Parallel()
	b := setup(t, options{})
	const n = 20_000
	tasks := make([]*batchv1.TaskSpec, n)
	for i := range tasks {
		tasks[i] = &batchv1.TaskSpec{Argv: []string{"true"}}
	}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: tasks})).TaskSet
	if set.Counts.Total != n || set.Counts.Disclosed != n {
		t.Fatalf("counts: %v", set.Counts)
	}
	seen, token := 0, ""
	for {
		page := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageSize: 2000, PageToken: token}))
		for _, task := range page.Tasks {
			if int(task.Index) != seen {
				t.Fatalf("task %d at position %d", task.Index, seen)
			}
			seen++
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if seen != n {
		t.Fatalf("paged %d tasks, want %d", seen, n)
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{10, 20}}))
	c := must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, All: true}))
	if c.Canceled != n || c.Unchanged != 0 || c.TaskSet.Counts.Canceled != n || c.TaskSet.Counts.Requested != 0 {
		t.Fatalf("cancel: %v", c)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cl.Queues.Disclosed != 0 || cl.Queues.Requested != 0 {
		t.Fatalf("queues: %v", cl.Queues)
	}
}

// Health, reflection and metrics are served beside the services.
func TestHealthReflectionMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	res, err := http.Get(b.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"batchd_visible_response_seconds_bucket", "batchd_visible_slowdown_bucket", "batchd_load",
		`batchd_queue_length{class="requested"}`, "batchd_billed_slot_seconds_total", `batchd_free_slot_seconds_total{part="speculative_lost"}`, "batchd_beta"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// gRPC health over the Connect protocol (JSON).
	req, _ := http.NewRequestWithContext(context.Background(), "POST", b.http.URL+"/grpc.health.v1.Health/Check", strings.NewReader(`{"service":"batch.v1.TaskSetService"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "SERVING") {
		t.Fatalf("health: %d %s", res.StatusCode, body)
	}
	// The page is served at /.
	res, err = http.Get(b.http.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("page: %d", res.StatusCode)
	}
}

// WatchTaskSet sends a snapshot, then the tasks that changed.
func TestWatch(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(3)})).TaskSet
	_, err := b.tasks.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: 999})
	if err == nil {
		s, _ := b.tasks.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: 999})
		for s.Receive() {
		}
		err = s.Err()
	}
	wantCode(t, err, connect.CodeNotFound)

	recv := openWatch(t, b, set.Id)
	if m := recv(); !m.Snapshot || len(m.Tasks) != 3 || m.TaskSet.Counts.Disclosed != 3 {
		t.Fatalf("snapshot: %v", m)
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{1}}))
	m := recv()
	if m.Snapshot || len(m.Tasks) != 1 || m.Tasks[0].Index != 1 || m.Tasks[0].State != batchv1.TaskState_TASK_STATE_REQUESTED {
		t.Fatalf("change: %v", m)
	}
	w, _ := b.worker(t, "w", 1)
	st := w.start()
	for m = recv(); m.TaskSet.Counts.Running != 1; m = recv() {
	}
	w.won(st.CopyId, "x")
	for m = recv(); m.TaskSet.Counts.Finished != 1; m = recv() {
	}
	if len(m.Tasks) == 0 || m.Tasks[len(m.Tasks)-1].Copies[0].State != batchv1.CopyState_COPY_STATE_WON {
		t.Fatalf("finish: %v", m)
	}
}

// openWatch watches set id and returns a function that receives its next
// message, failing the test when the stream ends.
func openWatch(t *testing.T, b *bundle, id int64) func() *batchv1.WatchTaskSetResponse {
	t.Helper()
	return openWatchReq(t, b, &batchv1.WatchTaskSetRequest{SetId: id})
}

// A watch with nothing to say sends the set's summary with no tasks every
// WatchKeepalive, so that a client can tell a quiet stream from a dead
// connection; changes still come as before.
func TestWatchKeepalive(t *testing.T) {
	t.Parallel()
	b := setup(t, options{keepalive: 20 * time.Millisecond})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})).TaskSet
	recv := openWatch(t, b, set.Id)
	if m := recv(); !m.Snapshot || len(m.Tasks) != 2 {
		t.Fatalf("snapshot: %v", m)
	}
	for range 3 {
		if m := recv(); m.Snapshot || len(m.Tasks) != 0 || m.TaskSet.GetId() != set.Id || m.TaskSet.Counts.Disclosed != 2 {
			t.Fatalf("keepalive: %v, want the set's summary and no tasks", m)
		}
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0}}))
	m := recv()
	for len(m.Tasks) == 0 {
		m = recv()
	}
	if len(m.Tasks) != 1 || m.Tasks[0].Index != 0 || m.Tasks[0].State != batchv1.TaskState_TASK_STATE_REQUESTED || m.TaskSet.Counts.Requested != 1 {
		t.Fatalf("change after keepalives: %v", m)
	}
}

// An error without a code (here: the database went away) is Internal, and
// its text stays in the log.
func TestInternalErrorHidden(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.srv.DB().Close()
	_, err := b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{})
	wantCode(t, err, connect.CodeInternal)
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Message() != "internal error" {
		t.Fatalf("message %q, want %q", ce.Message(), "internal error")
	}
}

// TestGetOutputsPaging: GetOutputs through the generated client, in pages
// of a small budget; a bad token or budget is InvalidArgument, an index
// past the set NotFound.
func TestGetOutputsPaging(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	res := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Request: true,
		Array: &batchv1.TaskArray{First: 10, Last: 18, Step: 2, Spec: &batchv1.TaskSpec{Argv: []string{"true"}, NoSpeculation: true}}}))
	set := res.TaskSet.Id
	if res.Count != 5 {
		t.Fatalf("array 10-18:2 disclosed %d tasks", res.Count)
	}
	// The worker is sent each task's value; it answers with it.
	for range 5 {
		st := w.start()
		w.won(st.CopyId, fmt.Sprintf("value %s, index %d", st.Spec.Env[sched.ArrayValueEnv], st.Index))
	}
	got := map[int32]string{}
	token, pages := "", 0
	for {
		page, err := b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, MaxBytes: 20, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range page.Outputs {
			if int64(len(got[o.Index])) != o.StdoutOffset {
				t.Fatalf("task %d: piece at %d after %d bytes", o.Index, o.StdoutOffset, len(got[o.Index]))
			}
			got[o.Index] += string(o.Stdout)
		}
		if token = page.NextPageToken; token == "" || pages > 50 {
			break
		}
	}
	for i := int32(0); i < 5; i++ {
		if want := fmt.Sprintf("value %d, index %d", 10+2*i, i); got[i] != want {
			t.Errorf("task %d: %q, want %q", i, got[i], want)
		}
	}
	if pages < 5 {
		t.Errorf("%d pages for 5 outputs of 18 bytes at 20 bytes a page", pages)
	}
	_, err := b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, PageToken: "o1.2"})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, MaxBytes: store.MaxOutputsPageBytes + 1})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, Indexes: []int32{5}})
	wantCode(t, err, connect.CodeNotFound)
	_, err = b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, Indexes: []int32{1}, FirstIndex: 1})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, FirstIndex: 5})
	wantCode(t, err, connect.CodeNotFound)
	r := must[*batchv1.GetOutputsResponse](t)(b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set, FirstIndex: 3, Count: 9}))
	if len(r.Outputs) != 2 || r.Outputs[0].Index != 3 || string(r.Outputs[1].Stdout) != "value 18, index 4" {
		t.Errorf("range from 3: %v", r.Outputs)
	}
}

// TestDiscloseStreamArray: the first message of a DiscloseStream may carry
// an array; a later message may not, nor may tasks beside it.
func TestDiscloseStreamArray(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	arr := &batchv1.TaskArray{First: 1, Last: 100, Step: 3, Spec: echo(1)[0]}
	res, err := discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Name: "s", Array: arr})
	if err != nil || res.Count != 34 || res.TaskSet.Counts.Total != 34 {
		t.Fatalf("stream with an array: %v %v", res, err)
	}
	_, err = discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Tasks: echo(1)}, &batchv1.DiscloseStreamRequest{Array: arr})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Array: arr}, &batchv1.DiscloseStreamRequest{Tasks: echo(1)})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Array: arr, Tasks: echo(1)})
	wantCode(t, err, connect.CodeInvalidArgument)
}
