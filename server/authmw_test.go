package server_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
	"batchd/store"
	"batchd/worker"
)

// A call without a valid token, with the wrong role for its procedure or
// declaring a body past the procedure's read limit is answered, in the
// caller's protocol, while the client is still sending the body: the server
// decides from the headers and reads none of it (a 25 MB
// body without a token must not be read and decoded first). The body is a
// pipe whose writer blocks until the server has read 64 MiB; the test fails
// if that write ever completes, so it needs no clock.
func TestRefusedBeforeBodyIsRead(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1, Logger: logger(), RequestRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hc := worker.NewHTTPClient() // h2c: gRPC needs HTTP/2
	// A gRPC envelope declaring one message as long as the body: a server
	// that reads before it checks reads all of it, whatever the protocol.
	body := make([]byte, 128<<20) // past every procedure's limit
	binary.BigEndian.PutUint32(body[1:5], uint32(len(body)+1-5))

	protocols := []struct {
		name   string
		header map[string]string
	}{
		{"Connect", map[string]string{"Content-Type": "application/json", "Connect-Protocol-Version": "1"}},
		{"GRPC", map[string]string{"Content-Type": "application/grpc"}},
		{"GRPCWeb", map[string]string{"Content-Type": "application/grpc-web+proto"}},
	}
	calls := []struct {
		name, procedure, token string
		want                   connect.Code
	}{
		{"NoToken", batchv1connect.TaskSetServiceDiscloseProcedure, "", connect.CodeUnauthenticated},
		{"WrongToken", batchv1connect.TaskSetServiceDiscloseProcedure, "bd_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", connect.CodeUnauthenticated},
		{"NoTokenStream", batchv1connect.TaskSetServiceDiscloseStreamProcedure, "", connect.CodeUnauthenticated},
		{"WorkerOnDisclose", batchv1connect.TaskSetServiceDiscloseProcedure, srv.LocalWorkerToken(), connect.CodePermissionDenied},
		{"AdminOnReport", batchv1connect.WorkerServiceReportFinishedProcedure, srv.AdminToken(), connect.CodePermissionDenied},
		{"WorkerOnAddUser", batchv1connect.UserServiceAddUserProcedure, srv.LocalWorkerToken(), connect.CodePermissionDenied},
		{"DiscloseTooBig", batchv1connect.TaskSetServiceDiscloseProcedure, srv.AdminToken(), connect.CodeResourceExhausted},
		{"GetTaskSetTooBig", batchv1connect.TaskSetServiceGetTaskSetProcedure, srv.AdminToken(), connect.CodeResourceExhausted},
		{"ReportTooBig", batchv1connect.WorkerServiceReportFinishedProcedure, srv.LocalWorkerToken(), connect.CodeResourceExhausted},
	}
	for _, p := range protocols {
		for _, c := range calls {
			t.Run(p.name+"/"+c.name, func(t *testing.T) {
				pr, pw := io.Pipe()
				defer pw.CloseWithError(errors.New("test over"))
				written := make(chan error, 1)
				go func() {
					_, err := pw.Write(body)
					written <- err
				}()
				req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, srv.URL()+c.procedure, pr)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = int64(len(body)) + 1 // the last byte never comes
				for k, v := range p.header {
					req.Header.Set(k, v)
				}
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				type result struct {
					code connect.Code
					err  error
				}
				answered := make(chan result, 1)
				go func() {
					res, err := hc.Do(req)
					if err != nil {
						answered <- result{err: err}
						return
					}
					defer res.Body.Close()
					code, err := wireCode(res)
					answered <- result{code, err}
				}()
				for {
					select {
					case err := <-written:
						if err == nil {
							t.Fatalf("the server read the whole %d MiB body before answering", len(body)>>20)
						}
						written = nil // the client gave up the body: the answer is on its way
						continue
					case r := <-answered:
						if r.err != nil {
							t.Fatal(r.err)
						}
						if r.code != c.want {
							t.Fatalf("code %v, want %v", r.code, c.want)
						}
					}
					break
				}
			})
		}
	}
}

// wireCode reads the Connect code of an error answer in any of the three
// protocols: gRPC and gRPC-Web put it in grpc-status (a header or a
// trailer), Connect in the JSON body.
func wireCode(res *http.Response) (connect.Code, error) {
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	for _, h := range []http.Header{res.Header, res.Trailer} {
		if s := h.Get("Grpc-Status"); s != "" {
			n, err := strconv.Atoi(s)
			return connect.Code(n), err
		}
	}
	var e struct{ Code string }
	if err := json.Unmarshal(b, &e); err != nil {
		return 0, errors.New("no code in " + strings.TrimSpace(string(b)))
	}
	var c connect.Code
	err = c.UnmarshalText([]byte(e.Code))
	return c, err
}

// Each procedure reads only as much as it needs: a unary Disclose past
// server.DiscloseRequestBytes, a Request past its index limit, a
// DiscloseStream chunk past server.DiscloseChunkBytes and a worker's report
// past two output caps and the kept-file cap are ResourceExhausted, from
// the generated client; a report of two full output streams and full kept
// files still fits.
func TestReadLimitsPerProcedure(t *testing.T) {
	t.Parallel()
	b := setup(t, options{cap: 1 << 20, keepTask: 1 << 20})
	bigArg := strings.Repeat("x", 100<<10)
	many := func(bytes int) []*batchv1.TaskSpec {
		var out []*batchv1.TaskSpec
		for n := 0; n < bytes; n += len(bigArg) {
			out = append(out, &batchv1.TaskSpec{Argv: []string{"echo", bigArg}})
		}
		return out
	}
	_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: many(server.DiscloseRequestBytes + 1)})
	wantCode(t, err, connect.CodeResourceExhausted)
	_, err = discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Tasks: many(server.DiscloseChunkBytes + 1)})
	wantCode(t, err, connect.CodeResourceExhausted)
	_, err = b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{PageToken: strings.Repeat("x", server.SmallRequestBytes+1)})
	wantCode(t, err, connect.CodeResourceExhausted)
	// The biggest Request reaches the handler (no set yet: NotFound).
	big := make([]int32, store.MaxIndexesPerCall)
	for i := range big {
		big[i] = int32(store.MaxTasksPerSet - 1 - i)
	}
	_, err = b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: 1, Indexes: big})
	wantCode(t, err, connect.CodeNotFound)

	// The stream's chunks under the limit add up past the unary limit.
	res, err := discloseStream(ctx(t), b.tasks, &batchv1.DiscloseStreamRequest{Tasks: many(server.DiscloseChunkBytes - 1<<20)},
		&batchv1.DiscloseStreamRequest{Tasks: many(server.DiscloseChunkBytes - 1<<20)},
		&batchv1.DiscloseStreamRequest{Tasks: many(server.DiscloseChunkBytes - 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if want := int32(3 * len(many(server.DiscloseChunkBytes-1<<20))); res.Count != want {
		t.Fatalf("count %d, want %d", res.Count, want)
	}

	w, _ := b.worker(t, "w1", 1)
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: res.TaskSet.Id, Indexes: []int32{0}}))
	st := w.start()
	_, err = b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: st.CopyId, Stdout: make([]byte, 8<<20)})
	wantCode(t, err, connect.CodeResourceExhausted)
	full := make([]byte, 1<<20) // two streams of the output cap and the kept-file cap fit
	kept := []*batchv1.KeptFileContent{{File: &batchv1.KeptFile{Path: "f"}, Content: full}}
	rep, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: st.CopyId, Stdout: full, Stderr: full, Kept: kept, RunSeconds: 1})
	if err != nil || rep.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("report of two full streams: %v, %v", rep, err)
	}
}
