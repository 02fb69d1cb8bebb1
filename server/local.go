package server

import (
	"context"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// LocalTransport is the worker protocol as in-process calls, for the worker
// slots embedded in `batchd serve`: the same handlers a remote worker
// reaches over Connect, called directly with the embedded worker's identity,
// so the local slots pay for no HTTP/2, protobuf encoding or compression
// and never queue behind API calls for a connection or a handler. Errors
// come back as Connect errors, mapped as the interceptor maps them, since
// the worker reads their codes (connect.CodeOf).
//
//	worker.Run(ctx, worker.Config{Transport: srv.LocalTransport(), ...})
func (s *Server) LocalTransport() wire.Transport { return localTransport{s} }

type localTransport struct{ s *Server }

// caller puts the embedded worker's identity into ctx, as identify does for
// a call that carries its token.
func (t localTransport) caller(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, Caller{Name: localWorkerUser, Role: store.RoleWorker})
}

func (t localTransport) Register(ctx context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error) {
	ctx = t.caller(ctx)
	defer t.s.gate.workerCall()()
	res, err := workerHandler(t).Register(ctx, req)
	return res, t.s.connectError(ctx, err)
}

func (t localTransport) Heartbeat(ctx context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	ctx = t.caller(ctx)
	defer t.s.gate.workerCall()()
	res, err := workerHandler(t).Heartbeat(ctx, req)
	return res, t.s.connectError(ctx, err)
}

func (t localTransport) ReportFinished(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	ctx = t.caller(ctx)
	defer t.s.gate.workerCall()()
	res, err := workerHandler(t).ReportFinished(ctx, req)
	return res, t.s.connectError(ctx, err)
}

func (t localTransport) ReportOutput(ctx context.Context, req *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error) {
	ctx = t.caller(ctx)
	defer t.s.gate.workerCall()()
	res, err := workerHandler(t).ReportOutput(ctx, req)
	return res, t.s.connectError(ctx, err)
}

func (t localTransport) Assignments(ctx context.Context, req *batchv1.AssignmentsRequest) (wire.AssignmentStream, error) {
	ctx = t.caller(ctx)
	f, err := t.s.openAssignments(ctx, sched.WorkerID(req.WorkerId))
	if err != nil {
		return nil, t.s.connectError(ctx, err)
	}
	return &localStream{f: f}, nil
}

// localStream reads an assignFeed directly: each Receive takes the next
// order of the batch the feed last handed over, waiting for a new batch
// when it is used up.
type localStream struct {
	f      *assignFeed
	batch  []*batchv1.AssignmentsResponse
	msg    *batchv1.AssignmentsResponse
	err    error
	closed bool
}

func (l *localStream) Receive() bool {
	if l.closed {
		return false
	}
	if len(l.batch) == 0 {
		msgs, err := l.f.next()
		if msgs == nil {
			if err != nil {
				l.err = l.f.s.connectError(l.f.ctx, err)
			}
			l.Close()
			return false
		}
		l.batch = msgs
	}
	l.msg, l.batch = l.batch[0], l.batch[1:]
	return true
}

func (l *localStream) Msg() *batchv1.AssignmentsResponse { return l.msg }

func (l *localStream) Err() error { return l.err }

// Close ends the stream; orders taken but not yet received are queued
// again for the worker's next stream.
func (l *localStream) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.f.requeue(l.batch)
	l.batch = nil
	l.f.close()
	return nil
}
