package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/store"
)

// The fuzz targets send arbitrary bytes as the binary Protobuf body of one
// RPC to a real server on a loopback port, through connect-go's decoding,
// the edge checks and the store. Whatever the bytes, the answer is a
// response or an error the caller can act on: never Internal, Unknown or
// Unimplemented (a panic in a handler answers Internal too), and where
// the request decodes, the response agrees with it. `make fuzz` runs each
// for FUZZTIME; plain `go test` runs the seeds below and testdata/fuzz.

// fuzzBundle is the server a fuzz target calls, with a finished task
// ("hello world" on stdout, billed at billedAt) in set 1, whose 3 tasks
// are: 0 finished, 1 running on worker "w", 2 disclosed.
type fuzzBundle struct {
	*bundle
	admin, worker string
	set           int64
	copyID        int64
	billedAt      time.Time
}

const fuzzStdout = "hello world"

func fuzzSetup(f *testing.F) *fuzzBundle {
	b := setup(f, options{maxSets: -1, maxQueued: -1})
	fb := &fuzzBundle{bundle: b, admin: adminToken(f, b.dir), worker: b.srv.LocalWorkerToken()}
	reg, err := b.workers.Register(ctx(f), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: 2})
	if err != nil || reg.WorkerId != "w" {
		f.Fatal(reg, err)
	}
	res, err := b.tasks.Disclose(ctx(f), &batchv1.DiscloseRequest{Name: "fuzz", Tasks: echo(3)})
	if err != nil {
		f.Fatal(err)
	}
	fb.set = res.TaskSet.Id
	if _, err := b.tasks.Request(ctx(f), &batchv1.RequestRequest{SetId: fb.set, Indexes: []int32{0, 1}}); err != nil {
		f.Fatal(err)
	}
	b.srv.DispatchOnce()
	live, err := b.srv.DB().WorkerCopies(ctx(f), "w")
	if err != nil || len(live) != 2 {
		f.Fatalf("live copies %v, %v", live, err)
	}
	for _, lc := range live {
		if lc.Copy.Task.Index == 0 {
			r, err := b.workers.ReportFinished(ctx(f), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: int64(lc.Copy.ID),
				Stdout: []byte(fuzzStdout), RunSeconds: 2, CpuSeconds: 1})
			if err != nil || r.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
				f.Fatal(r, err)
			}
		} else {
			fb.copyID = int64(lc.Copy.ID)
		}
	}
	fb.billedAt = b.clock.Now()
	return fb
}

// call posts body to procedure over the Connect protocol (binary
// Protobuf) and decodes the answer into res. It returns the error code
// ("" when the call succeeded) and fails t for an answer a caller cannot
// act on.
func (fb *fuzzBundle) call(t *testing.T, token, procedure string, body []byte, res proto.Message) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fb.http.URL+procedure, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/proto")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := fb.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := proto.Unmarshal(out, res); err != nil {
			t.Fatalf("%s: undecodable response: %v", procedure, err)
		}
		return ""
	}
	var e struct{ Code, Message string }
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("%s: HTTP %d with %q", procedure, resp.StatusCode, out)
	}
	switch e.Code {
	case "internal", "unknown", "unimplemented", "data_loss", "":
		t.Fatalf("%s: %s: %s (request %x)", procedure, e.Code, e.Message, body)
	}
	return e.Code
}

func marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// addSeeds adds the messages, and each of them cut short, as seeds.
func addSeeds(f *testing.F, msgs ...proto.Message) {
	for _, m := range msgs {
		b := marshal(m)
		f.Add(b)
		if len(b) > 1 {
			f.Add(b[:len(b)/2])
		}
	}
}

func FuzzDisclose(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.DiscloseRequest{Name: "n", Tasks: echo(2)},
		&batchv1.DiscloseRequest{SetId: 1, Tasks: echo(1), IdempotencyKey: "k", Request: true},
		&batchv1.DiscloseRequest{SetId: -1, Tasks: echo(1)},
		&batchv1.DiscloseRequest{SetId: math.MaxInt64, Tasks: echo(1)},
		&batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"x"}, Env: map[string]string{"A": "b", "": "c"},
			EstimateSeconds: math.Inf(1), TimeoutSeconds: math.NaN(), DeadlineSeconds: 1e9}}},
		&batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{""}}}, IdempotencyKey: strings.Repeat("k", 257)},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.DiscloseResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceDiscloseProcedure, body, &res) != "" {
			return
		}
		var req batchv1.DiscloseRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatalf("the server took a request that does not decode: %v", err)
		}
		if !res.Replayed && int(res.Count) != len(req.Tasks) {
			t.Fatalf("disclosed %d tasks, sent %d", res.Count, len(req.Tasks))
		}
		if res.TaskSet.Counts.Total < int64(res.FirstIndex)+int64(res.Count) {
			t.Fatalf("set holds %d tasks, answer covers %d+%d", res.TaskSet.Counts.Total, res.FirstIndex, res.Count)
		}
	})
}

func FuzzRequest(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.RequestRequest{SetId: 1, Indexes: []int32{2}},
		&batchv1.RequestRequest{SetId: 1, All: true},
		&batchv1.RequestRequest{SetId: 1, Indexes: []int32{-1, math.MaxInt32, math.MinInt32}},
		&batchv1.RequestRequest{SetId: math.MinInt64, Indexes: []int32{0}, All: true},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.RequestResponse
		fb.call(t, fb.admin, batchv1connect.TaskSetServiceRequestProcedure, body, &res)
	})
}

func FuzzCancel(f *testing.F) {
	fb := fuzzSetup(f)
	// Fuzz cancels of the shared set would soon leave nothing to cancel:
	// the seeds mostly name sets the fuzzer discloses for itself.
	addSeeds(f,
		&batchv1.CancelRequest{SetId: 2, Indexes: []int32{0}},
		&batchv1.CancelRequest{SetId: 3, All: true},
		&batchv1.CancelRequest{SetId: 1, Indexes: []int32{store.MaxTasksPerSet, -1}},
		&batchv1.CancelRequest{SetId: -1, All: true},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.CancelResponse
		// Give the fuzzer a fresh set now and then, so that cancels of
		// unrequested tasks keep happening.
		if _, err := fb.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)}); err != nil {
			t.Fatal(err)
		}
		fb.call(t, fb.admin, batchv1connect.TaskSetServiceCancelProcedure, body, &res)
	})
}

func FuzzGetTaskSet(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.GetTaskSetRequest{SetId: 1, PageSize: 1, PageToken: "0"},
		&batchv1.GetTaskSetRequest{SetId: 1, PageSize: math.MaxInt32, PageToken: "2147483647", States: []batchv1.TaskState{1, 2, 99}},
		&batchv1.GetTaskSetRequest{SetId: 1, PageSize: -1, PageToken: "-5"},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.GetTaskSetResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceGetTaskSetProcedure, body, &res) != "" {
			return
		}
		var req batchv1.GetTaskSetRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) > store.MaxTaskPage {
			t.Fatalf("%d tasks in one page", len(res.Tasks))
		}
	})
}

func FuzzRetry(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.RetryRequest{SetId: 1, Indexes: []int32{0}},
		&batchv1.RetryRequest{SetId: 2, All: true},
		&batchv1.RetryRequest{SetId: 2, Indexes: []int32{0, 1, 5}},
		&batchv1.RetryRequest{SetId: 1, Indexes: []int32{-1, math.MaxInt32}, All: true},
		&batchv1.RetryRequest{SetId: math.MinInt64},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		// A fresh set with a canceled task now and then, so that retries
		// keep finding something to retry.
		d, err := fb.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(2)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fb.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: d.TaskSet.Id, Indexes: []int32{0}}); err != nil {
			t.Fatal(err)
		}
		var res batchv1.RetryResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceRetryProcedure, body, &res) != "" {
			return
		}
		var req batchv1.RetryRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if res.TaskSet.GetId() != req.SetId {
			t.Fatalf("retry of set %d answered set %d", req.SetId, res.TaskSet.GetId())
		}
	})
}

func FuzzGetTask(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.GetTaskRequest{SetId: 1, Index: 0},
		&batchv1.GetTaskRequest{SetId: 1, Index: 1},
		&batchv1.GetTaskRequest{SetId: 1, Index: math.MaxInt32},
		&batchv1.GetTaskRequest{SetId: -1, Index: -1},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.GetTaskResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceGetTaskProcedure, body, &res) != "" {
			return
		}
		var req batchv1.GetTaskRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if res.Task.GetSetId() != req.SetId || res.Task.GetIndex() != req.Index || res.Task.GetAttempt() < 1 {
			t.Fatalf("GetTask %d/%d answered %v", req.SetId, req.Index, res.Task)
		}
	})
}

func FuzzListTaskSets(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.ListTaskSetsRequest{PageSize: 1},
		&batchv1.ListTaskSetsRequest{PageSize: math.MinInt32, PageToken: "9223372036854775807", AllOwners: true},
		&batchv1.ListTaskSetsRequest{PageToken: "9223372036854775808"},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.ListTaskSetsResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceListTaskSetsProcedure, body, &res) == "" && len(res.TaskSets) > store.MaxSetPage {
			t.Fatalf("%d sets in one page", len(res.TaskSets))
		}
	})
}

func FuzzGetOutput(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Offset: 3, Limit: 4},
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Offset: math.MaxInt64, Limit: math.MaxInt64},
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Offset: store.MaxOutputOffset, Limit: 1},
		&batchv1.GetOutputRequest{SetId: 1, Index: 1},
		&batchv1.GetOutputRequest{SetId: 1, Index: -1, Offset: -1, Limit: math.MinInt64},
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Attempt: 1},
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Attempt: math.MaxInt32},
		&batchv1.GetOutputRequest{SetId: 1, Index: 0, Attempt: -1},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.GetOutputResponse
		if fb.call(t, fb.admin, batchv1connect.TaskSetServiceGetOutputProcedure, body, &res) != "" {
			return
		}
		var req batchv1.GetOutputRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		// Only task 0 of the set has an output: the answer is its bytes
		// [offset, offset+limit).
		limit := req.Limit
		if limit == 0 {
			limit = store.DefaultOutputRead
		}
		want := ""
		if req.Offset < int64(len(fuzzStdout)) {
			want = fuzzStdout[req.Offset:min(int64(len(fuzzStdout)), req.Offset+limit)]
		}
		if string(res.Stdout) != want || res.StdoutSize != int64(len(fuzzStdout)) {
			t.Fatalf("offset %d limit %d: got %q (size %d), want %q", req.Offset, req.Limit, res.Stdout, res.StdoutSize, want)
		}
	})
}

func FuzzGetBill(f *testing.F) {
	fb := fuzzSetup(f)
	far := func(y int) *timestamppb.Timestamp { return timestamppb.New(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)) }
	addSeeds(f,
		&batchv1.GetBillRequest{IncludeLines: true},
		&batchv1.GetBillRequest{Since: far(1600), Until: far(3000), IncludeLines: true, PageSize: 1},
		&batchv1.GetBillRequest{Since: far(2263), SetId: 1},
		&batchv1.GetBillRequest{Until: &timestamppb.Timestamp{Seconds: math.MaxInt64, Nanos: -1}, PageToken: "9223372036854775807"},
		&batchv1.GetBillRequest{Owner: "*", PageSize: -1, SetId: -1},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.GetBillResponse
		if fb.call(t, fb.admin, batchv1connect.BillingServiceGetBillProcedure, body, &res) != "" {
			return
		}
		var req batchv1.GetBillRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		// The one charge line is billed at billedAt, of set 1, to the admin.
		want := int64(1)
		if (req.Since != nil && req.Since.AsTime().After(fb.billedAt)) || (req.Until != nil && !req.Until.AsTime().After(fb.billedAt)) ||
			(req.SetId != 0 && req.SetId != fb.set) || (req.Owner != "" && req.Owner != "admin" && req.Owner != store.AllOwners) {
			want = 0
		}
		if res.Totals.Lines != want {
			t.Fatalf("since %v until %v set %d owner %q: %d lines, want %d", req.Since, req.Until, req.SetId, req.Owner, res.Totals.Lines, want)
		}
	})
}

func FuzzRegister(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.RegisterRequest{Isolation: "namespaces", Name: "v", Slots: 1, Running: []*batchv1.HeldCopy{{CopyId: 99, Slot: 0, CpuSeconds: 1}}},
		&batchv1.RegisterRequest{Isolation: "namespaces", Name: "v", Slots: math.MaxInt32},
		&batchv1.RegisterRequest{Isolation: "namespaces", Name: "u", Slots: 2, Running: []*batchv1.HeldCopy{{CopyId: -1, Slot: -1, Progress: math.NaN(), CpuSeconds: math.Inf(1)}}},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req batchv1.RegisterRequest
		if proto.Unmarshal(body, &req) == nil && req.Name == "w" {
			return // the set-up's worker keeps its copies
		}
		var res batchv1.RegisterResponse
		fb.call(t, fb.worker, batchv1connect.WorkerServiceRegisterProcedure, body, &res)
	})
}

func FuzzHeartbeat(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: 2, Progress: 0.5, CpuSeconds: 1}}},
		&batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: math.MaxInt64, Progress: math.Inf(-1), CpuSeconds: 1e300}}},
		&batchv1.HeartbeatRequest{WorkerId: "nobody"},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.HeartbeatResponse
		fb.call(t, fb.worker, batchv1connect.WorkerServiceHeartbeatProcedure, body, &res)
	})
}

func FuzzReportFinished(f *testing.F) {
	fb := fuzzSetup(f)
	addSeeds(f,
		&batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: 1, Stdout: []byte("again"), RunSeconds: 1},
		&batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: math.MaxInt64, ExitCode: math.MinInt32, CpuSeconds: math.MaxFloat64},
		&batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: 2, Killed: true, TimedOut: true, StartError: "x",
			EndedAt: &timestamppb.Timestamp{Seconds: math.MinInt64}},
	)
	f.Fuzz(func(t *testing.T, body []byte) {
		var res batchv1.ReportFinishedResponse
		fb.call(t, fb.worker, batchv1connect.WorkerServiceReportFinishedProcedure, body, &res)
	})
}

// FuzzEnvelope sends arbitrary bytes as an enveloped gRPC-Web request body
// (the framing of gRPC and of Connect streaming calls): the status is
// never Internal, Unknown or Unimplemented.
func FuzzEnvelope(f *testing.F) {
	fb := fuzzSetup(f)
	env := func(flags byte, msg []byte) []byte {
		p := []byte{flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(p[1:], uint32(len(msg)))
		return append(p, msg...)
	}
	out := marshal(&batchv1.GetOutputRequest{SetId: 1, Index: 0})
	f.Add(env(0, out))
	f.Add(env(0, out)[:3])
	f.Add(env(0, out)[:7])
	f.Add(env(1, out))
	f.Add(env(2, out))
	f.Add(env(0x80, out))
	f.Add(append(env(0, out), env(0, out)...))
	f.Add([]byte{})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := http.NewRequest(http.MethodPost, fb.http.URL+batchv1connect.TaskSetServiceGetOutputProcedure, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/grpc-web+proto")
		req.Header.Set("Authorization", "Bearer "+fb.admin)
		resp, err := fb.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		status := resp.Header.Get("Grpc-Status") // trailers-only answer
		if status == "" {
			status = grpcWebStatus(raw)
		}
		switch status {
		case "2", "12", "13", "":
			t.Fatalf("grpc-status %q for body %x (answer %q)", status, body, raw)
		}
	})
}

// grpcWebStatus returns the grpc-status of a gRPC-Web response body's
// trailers frame ("" when there is none).
func grpcWebStatus(b []byte) string {
	for len(b) >= 5 {
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if len(b) < 5+n {
			return ""
		}
		if b[0]&0x80 != 0 {
			for _, line := range strings.Split(string(b[5:5+n]), "\r\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "grpc-status") {
					if _, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
						return strings.TrimSpace(v)
					}
				}
			}
		}
		b = b[5+n:]
	}
	return ""
}
