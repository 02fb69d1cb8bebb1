// Package wire is the contract between the server and its worker agents:
// how an agent speaks the worker protocol (Transport, AssignmentStream)
// and the clocks both ends derive from a lease (LeaseTiming). The server
// implements Transport in process for its embedded slots; the agent in
// package worker speaks it over Connect. Neither side imports the other.
package wire

import (
	"context"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// Transport is how an agent speaks the worker protocol (WorkerService) to
// its server. A remote agent uses Connect over HTTP/2 (ConnectTransport);
// the slots embedded in `batchd serve` use the server's in-process
// implementation, which calls the same handlers without HTTP, protobuf
// encoding or compression. Errors carry Connect codes either way
// (connect.CodeOf): NotFound means "register again", FailedPrecondition,
// PermissionDenied and InvalidArgument mean "the server will never take
// this", anything else is retried.
type Transport interface {
	Register(ctx context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error)
	// Assignments opens the worker's stream of orders. It returns once the
	// server has accepted the stream.
	Assignments(ctx context.Context, req *batchv1.AssignmentsRequest) (AssignmentStream, error)
	Heartbeat(ctx context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error)
	ReportFinished(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error)
	// ReportOutput pushes a followed copy's output (the agent sends it
	// only for copies the server asked it to follow).
	ReportOutput(ctx context.Context, req *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error)
}

// AssignmentStream is an open Assignments stream, read like
// connect.ServerStreamForClient: Receive until it returns false, then Err.
type AssignmentStream interface {
	Receive() bool
	Msg() *batchv1.AssignmentsResponse
	Err() error
	Close() error
}

// LeaseTiming derives the worker protocol's clocks from the lease: the
// heartbeat interval (lease/5, so four heartbeats can fail before the
// lease ends), the deadline of one renewing call, Heartbeat or Register
// (lease/3), and the HTTP/2 keepalive (a ping after lease/5 without a
// frame, the connection dropped when its ack has not come lease/5 later:
// a dead connection is noticed within 2/5 of a lease, and the next call
// dials a new one).
func LeaseTiming(lease time.Duration) (heartbeat, call, ping time.Duration) {
	return lease / 5, lease / 3, lease / 5
}

// ManyReporter is a Transport that also reports several copies' ends in one
// call (WorkerService.ReportFinishedMany). An agent whose transport is not
// one, or whose server answers Unimplemented, reports one copy a call.
type ManyReporter interface {
	ReportFinishedMany(ctx context.Context, req *batchv1.ReportFinishedManyRequest) (*batchv1.ReportFinishedManyResponse, error)
}

// Bounds of one ReportFinishedMany call: at most MaxReportsPerCall
// reports, of at most ReportManyItemBytes each (a bigger one goes alone
// through ReportFinished), and at most ReportManyBytes for the whole
// encoded request, which is the server's read limit for it.
const (
	MaxReportsPerCall   = 512
	ReportManyItemBytes = 64 << 10
	ReportManyBytes     = 4 << 20
)
