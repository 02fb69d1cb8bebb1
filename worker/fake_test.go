package worker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// fakeServer is a WorkerService test double: it records what workers send,
// streams the assignments a test queues, and answers NotFound to workers it
// does not know (as a restarted server does). Its records survive restart;
// only the set of known workers is forgotten.
type fakeServer struct {
	t    testing.TB
	addr string

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	srv        *http.Server
	known      map[string]bool
	registers  []*batchv1.RegisterRequest
	heartbeats []*batchv1.HeartbeatRequest
	reports    []*batchv1.ReportFinishedRequest
	outcomes   map[int64]batchv1.ReportOutcome
	assign     chan *batchv1.AssignmentsResponse
	streams    int // open Assignments streams
	conns      int // connections accepted
	// Answers.
	lease, hb    float64
	outCap       int64
	registerKill []int64
	hbKill       []int64
	refuse       map[int64]connect.Code // ReportFinished errors by copy
	// ReportFinishedMany (reportmany_test.go): calls made, the sizes of
	// those answered, Unimplemented when noMany, held until manyGate
	// closes when set.
	manyCalls int
	manySizes []int
	noMany    bool
	manyGate  chan struct{}
	live      fakeLive // ReportOutput (live_test.go)
}

func newFakeServer(t testing.TB) *fakeServer {
	t.Helper()
	f := &fakeServer{
		t:        t,
		changed:  make(chan struct{}),
		known:    map[string]bool{},
		outcomes: map[int64]batchv1.ReportOutcome{},
		assign:   make(chan *batchv1.AssignmentsResponse, 64),
		lease:    15,
		hb:       5,
		outCap:   1 << 20,
		refuse:   map[int64]connect.Code{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

func (f *fakeServer) url() string { return "http://" + f.addr }

func (f *fakeServer) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle(batchv1connect.NewWorkerServiceHandler(f))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &p, ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				f.mu.Lock()
				f.conns++
				f.mu.Unlock()
			}
		}}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the server and every connection (streams included).
func (f *fakeServer) stop() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// start listens again on the same address, forgetting known workers.
func (f *fakeServer) start() {
	f.t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 100; i++ { // the port may linger briefly after Close
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.known = map[string]bool{}
	f.mu.Unlock()
	f.serve(ln)
	f.bump()
}

func (f *fakeServer) bump() {
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// waitFor waits until cond (called with f.mu held) holds, or fails.
func (f *fakeServer) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			f.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (f *fakeServer) send(m *batchv1.AssignmentsResponse) { f.assign <- m }

func (f *fakeServer) startCopy(id int64, slot int32, spec *batchv1.TaskSpec) {
	f.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Start{Start: &batchv1.StartCopy{
		CopyId: id, Slot: slot, SetId: 7, Index: int32(id), Spec: spec,
	}}})
}

// report waits for the first report of copy id and returns it.
func (f *fakeServer) report(id int64) *batchv1.ReportFinishedRequest {
	f.t.Helper()
	var r *batchv1.ReportFinishedRequest
	f.waitFor("report of copy", func() bool {
		for _, x := range f.reports {
			if x.CopyId == id {
				r = x
				return true
			}
		}
		return false
	})
	return r
}

func (f *fakeServer) reportCount(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, x := range f.reports {
		if x.CopyId == id {
			n++
		}
	}
	return n
}

func (f *fakeServer) Register(_ context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error) {
	f.mu.Lock()
	f.known[req.Name] = true
	f.registers = append(f.registers, proto.CloneOf(req))
	resp := &batchv1.RegisterResponse{
		WorkerId: req.Name, LeaseSeconds: f.lease, HeartbeatSeconds: f.hb,
		OutputCapBytes: f.outCap, Kill: f.registerKill,
	}
	f.mu.Unlock()
	f.bump()
	return resp, nil
}

func (f *fakeServer) Assignments(ctx context.Context, req *batchv1.AssignmentsRequest, st *connect.ServerStream[batchv1.AssignmentsResponse]) error {
	f.mu.Lock()
	ok := f.known[req.WorkerId]
	if ok {
		f.streams++
	}
	f.mu.Unlock()
	if !ok {
		return connect.NewError(connect.CodeNotFound, errors.New("unknown worker"))
	}
	f.bump()
	defer func() {
		f.mu.Lock()
		f.streams--
		f.mu.Unlock()
		f.bump()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-f.assign:
			if err := st.Send(m); err != nil {
				return err
			}
		}
	}
}

func (f *fakeServer) Heartbeat(_ context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	f.mu.Lock()
	if !f.known[req.WorkerId] {
		f.mu.Unlock()
		return nil, connect.NewError(connect.CodeNotFound, errors.New("unknown worker"))
	}
	f.heartbeats = append(f.heartbeats, proto.CloneOf(req))
	resp := &batchv1.HeartbeatResponse{LeaseSeconds: f.lease, Kill: f.hbKill}
	f.hbKill = nil
	f.mu.Unlock()
	f.bump()
	return resp, nil
}

func (f *fakeServer) ReportFinished(_ context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	f.mu.Lock()
	if !f.known[req.WorkerId] {
		f.mu.Unlock()
		return nil, connect.NewError(connect.CodeNotFound, errors.New("unknown worker"))
	}
	f.reports = append(f.reports, proto.CloneOf(req))
	code, refused := f.refuse[req.CopyId]
	out, ok := f.outcomes[req.CopyId]
	if !ok {
		out = batchv1.ReportOutcome_REPORT_OUTCOME_WON
		f.outcomes[req.CopyId] = out
	}
	f.mu.Unlock()
	f.bump()
	if refused {
		return nil, connect.NewError(code, errors.New("refused"))
	}
	return &batchv1.ReportFinishedResponse{Outcome: out}, nil
}

func (f *fakeServer) ReportPilots(context.Context, *batchv1.ReportPilotsRequest) (*batchv1.ReportPilotsResponse, error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("the fake server keeps no pools"))
}

func (f *fakeServer) MintWorkerToken(context.Context, *batchv1.MintWorkerTokenRequest) (*batchv1.MintWorkerTokenResponse, error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("the fake server mints no tokens"))
}
