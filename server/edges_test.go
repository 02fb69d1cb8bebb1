package server_test

import (
	"math"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/store"
)

// A reused idempotency key with other content is refused with
// AlreadyExists; the same content replays, sent as
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

// GetOutput with offset = limit = 2^63−1 read from the start of the stream
// (offset+1 must not overflow in the SQL arguments); the
// largest allowed values read nothing, larger ones are InvalidArgument.
func TestGetOutputHugeRange(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	w.won(w.start().CopyId, "hello")
	for _, c := range []struct {
		name          string
		offset, limit int64
		want          string
		code          connect.Code
	}{
		{"OK", 1, 3, "ell", 0},
		{"OKPastEnd", 6, 0, "", 0},
		{"OKLargest", store.MaxOutputOffset, store.MaxOutputOffset, "", 0},
		{"ErrMaxInt64", math.MaxInt64, math.MaxInt64, "", connect.CodeInvalidArgument},
		{"ErrOffsetMaxInt64", math.MaxInt64, 1, "", connect.CodeInvalidArgument},
		{"ErrLimitMaxInt64", 0, math.MaxInt64, "", connect.CodeInvalidArgument},
		{"ErrOffsetPastMax", store.MaxOutputOffset + 1, 0, "", connect.CodeInvalidArgument},
		{"ErrNegative", -1, 0, "", connect.CodeInvalidArgument},
		{"ErrMinInt64", 0, math.MinInt64, "", connect.CodeInvalidArgument},
	} {
		out, err := b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0, Offset: c.offset, Limit: c.limit})
		if c.code != 0 {
			if connect.CodeOf(err) != c.code {
				t.Errorf("%s: got %q, %v (code %v), want %v", c.name, out.GetStdout(), err, connect.CodeOf(err), c.code)
			}
			continue
		}
		if err != nil || string(out.Stdout) != c.want || out.StdoutSize != 5 {
			t.Errorf("%s: got %q (size %d), %v, want %q", c.name, out.GetStdout(), out.GetStdoutSize(), err, c.want)
		}
	}
}

// GetBill went silently empty for an until after 2262-04-11 or a since
// before 1678 (UnixNano overflows there); such far bounds
// include everything on their side, and timestamps outside what
// google.protobuf.Timestamp allows are InvalidArgument.
func TestGetBillFarDates(t *testing.T) {
	t.Parallel()
	b := setup(t, options{prices: store.Prices{SlotSecond: 1}})
	w, _ := b.worker(t, "w", 1)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	w.won(w.start().CopyId, "x")
	date := func(y int) *timestamppb.Timestamp { return timestamppb.New(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)) }
	now := timestamppb.New(b.clock.Now())
	for _, c := range []struct {
		name         string
		since, until *timestamppb.Timestamp
		lines        int64
		code         connect.Code
	}{
		{"OKOpen", nil, nil, 1, 0},
		{"OKUntil2263", nil, date(2263), 1, 0},
		{"OKUntil9999", nil, timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)), 1, 0},
		{"OKSince1677", date(1677), nil, 1, 0},
		{"OKSinceYear1", date(1), date(9999), 1, 0},
		{"OKSince1677UntilNow", date(1677), now, 0, 0}, // until is exclusive: the line is at now
		{"OKSince2263", date(2263), nil, 0, 0},
		{"OKUntil1677", nil, date(1677), 0, 0},
		{"ErrUntilYear10000", nil, &timestamppb.Timestamp{Seconds: 253402300800}, 0, connect.CodeInvalidArgument},
		{"ErrSinceBeforeYear1", &timestamppb.Timestamp{Seconds: -62135596801}, nil, 0, connect.CodeInvalidArgument},
		{"ErrSinceMaxInt64", &timestamppb.Timestamp{Seconds: math.MaxInt64}, nil, 0, connect.CodeInvalidArgument},
		{"ErrUntilMinInt64", nil, &timestamppb.Timestamp{Seconds: math.MinInt64}, 0, connect.CodeInvalidArgument},
		{"ErrNanosNegative", &timestamppb.Timestamp{Seconds: 1, Nanos: -1}, nil, 0, connect.CodeInvalidArgument},
		{"ErrNanosTooLarge", nil, &timestamppb.Timestamp{Seconds: 1, Nanos: 1e9}, 0, connect.CodeInvalidArgument},
		{"ErrUntilBeforeSince", date(2000), date(1999), 0, connect.CodeInvalidArgument},
	} {
		bill, err := b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{Since: c.since, Until: c.until, IncludeLines: true})
		if c.code != 0 {
			if connect.CodeOf(err) != c.code {
				t.Errorf("%s: got %v (code %v), want %v", c.name, err, connect.CodeOf(err), c.code)
			}
			continue
		}
		if err != nil || bill.Totals.Lines != c.lines || int64(len(bill.Lines)) != c.lines {
			t.Errorf("%s: %d lines (%d listed), %v; want %d", c.name, bill.GetTotals().GetLines(), len(bill.GetLines()), err, c.lines)
		}
	}
}

// Every integer and time field of every request, at and past its edges:
// the values beyond them are InvalidArgument (never Internal, never a
// silently wrong answer).
func TestRequestEdges(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2), Request: true})).TaskSet
	copyID := w.start().CopyId
	spec := func(est, timeout, deadline float64) []*batchv1.TaskSpec {
		return []*batchv1.TaskSpec{{Argv: []string{"true"}, EstimateSeconds: est, TimeoutSeconds: timeout, DeadlineSeconds: deadline}}
	}
	const inv, ok, notFound = connect.CodeInvalidArgument, connect.Code(0), connect.CodeNotFound
	last := int32(store.MaxTasksPerSet - 1)
	for _, c := range []struct {
		name string
		call func() error
		want connect.Code
	}{
		{"Disclose/set_id=-1", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: -1, Tasks: echo(1)}))
		}, inv},
		{"Disclose/set_id=MinInt64", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: math.MinInt64, Tasks: echo(1)}))
		}, inv},
		{"Disclose/set_id=MaxInt64", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{SetId: math.MaxInt64, Tasks: echo(1)}))
		}, notFound},
		{"Disclose/seconds=max", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(store.MaxSeconds, store.MaxSeconds, store.MaxSeconds)}))
		}, ok},
		{"Disclose/estimate_seconds>max", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(1.5e9, 0, 0)}))
		}, inv},
		{"Disclose/timeout_seconds=1e12", func() error { return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(0, 1e12, 0)})) }, inv},
		{"Disclose/deadline_seconds=MaxFloat64", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(0, 0, math.MaxFloat64)}))
		}, inv},
		{"Disclose/timeout_seconds=-0.5", func() error { return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(0, -0.5, 0)})) }, inv},
		{"Disclose/estimate_seconds=NaN", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(math.NaN(), 0, 0)}))
		}, inv},
		{"Disclose/deadline_seconds=+Inf", func() error {
			return err2(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec(0, 0, math.Inf(1))}))
		}, inv},
		{"Request/set_id=-1", func() error { return err2(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: -1, All: true})) }, inv},
		{"Request/indexes=-1", func() error {
			return err2(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{0, -1}}))
		}, inv},
		{"Request/indexes=MinInt32", func() error {
			return err2(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{math.MinInt32}}))
		}, inv},
		{"Request/indexes=MaxInt32", func() error {
			return err2(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{math.MaxInt32}}))
		}, inv},
		{"Request/indexes=last", func() error {
			return err2(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, Indexes: []int32{last}}))
		}, notFound},
		{"Cancel/set_id=MinInt64", func() error {
			return err2(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: math.MinInt64, All: true}))
		}, inv},
		{"Cancel/indexes=-1", func() error {
			return err2(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{-1}}))
		}, inv},
		{"Cancel/indexes=MaxTasksPerSet", func() error {
			return err2(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{store.MaxTasksPerSet}}))
		}, inv},
		{"GetTaskSet/set_id=-1", func() error { return err2(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: -1})) }, inv},
		{"GetTaskSet/page_size=-1", func() error {
			return err2(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageSize: -1}))
		}, inv},
		{"GetTaskSet/page_size=MaxInt32", func() error {
			return err2(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageSize: math.MaxInt32}))
		}, ok},
		{"GetTaskSet/page_token=MaxInt32", func() error {
			return err2(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageToken: "2147483647"}))
		}, ok},
		{"GetTaskSet/page_token=MaxInt32+1", func() error {
			return err2(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id, PageToken: "2147483648"}))
		}, inv},
		{"ListTaskSets/page_size=MinInt32", func() error {
			return err2(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{PageSize: math.MinInt32}))
		}, inv},
		{"ListTaskSets/page_token=MaxInt64", func() error {
			return err2(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{PageToken: "9223372036854775807"}))
		}, ok},
		{"ListTaskSets/page_token=MaxInt64+1", func() error {
			return err2(b.tasks.ListTaskSets(ctx(t), &batchv1.ListTaskSetsRequest{PageToken: "9223372036854775808"}))
		}, inv},
		{"WatchTaskSet/set_id=-1", func() error {
			s, err := b.tasks.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: -1})
			if err != nil {
				return err
			}
			defer s.Close()
			for s.Receive() {
			}
			return s.Err()
		}, inv},
		{"GetOutput/set_id=-1", func() error { return err2(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: -1})) }, inv},
		{"GetOutput/index=-1", func() error {
			return err2(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: -1}))
		}, inv},
		{"GetOutput/index=MaxInt32", func() error {
			return err2(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: math.MaxInt32}))
		}, inv},
		{"GetBill/set_id=-1", func() error { return err2(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{SetId: -1})) }, inv},
		{"GetBill/page_size=-1", func() error { return err2(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{PageSize: -1})) }, inv},
		{"GetBill/page_token=MaxInt64", func() error {
			return err2(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true, PageToken: "9223372036854775807"}))
		}, ok},
		{"GetBill/page_token=-1", func() error { return err2(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{PageToken: "-1"})) }, inv},
		{"Register/slots=-1", func() error {
			return err2(b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "v", Slots: -1}))
		}, inv},
		{"Register/slots=MaxInt32", func() error {
			return err2(b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "v", Slots: math.MaxInt32}))
		}, inv},
		{"Heartbeat/cpu_seconds>max", func() error {
			return err2(b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: copyID, CpuSeconds: 1e10}}}))
		}, inv},
		{"ReportFinished/copy_id=MinInt64", func() error {
			return err2(b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: math.MinInt64}))
		}, inv},
		{"ReportFinished/run_seconds=MaxFloat64", func() error {
			return err2(b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: copyID, RunSeconds: math.MaxFloat64}))
		}, inv},
		{"ReportFinished/cpu_seconds>max", func() error {
			return err2(b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: copyID, CpuSeconds: 2e9}))
		}, inv},
	} {
		err := c.call()
		if got := connect.CodeOf(err); (c.want == ok && err != nil) || (c.want != ok && got != c.want) {
			t.Errorf("%s: got %v (code %v), want %v", c.name, err, got, c.want)
		}
	}
}

// err2 drops a call's answer and keeps its error.
func err2[T any](_ T, err error) error { return err }
