package worker

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
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
}

// AssignmentStream is an open Assignments stream, read like
// connect.ServerStreamForClient: Receive until it returns false, then Err.
type AssignmentStream interface {
	Receive() bool
	Msg() *batchv1.AssignmentsResponse
	Err() error
	Close() error
}

// ConnectTransport speaks the worker protocol over Connect to the server at
// baseURL, with hc (NewHTTPClient() when nil). The agent neither sends nor
// accepts compressed messages: they are small, and gzip cost more CPU than
// the bytes it saved (flate's reset was the largest symbol of a profile of
// the dispatch path).
func ConnectTransport(hc *http.Client, baseURL string, opts ...connect.ClientOption) Transport {
	if hc == nil {
		hc = NewHTTPClient()
	}
	opts = append([]connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}, opts...)
	return connectTransport{c: batchv1connect.NewWorkerServiceClient(hc, baseURL, opts...)}
}

type connectTransport struct {
	c batchv1connect.WorkerServiceClient
}

func (t connectTransport) Register(ctx context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error) {
	return t.c.Register(ctx, req)
}

func (t connectTransport) Assignments(ctx context.Context, req *batchv1.AssignmentsRequest) (AssignmentStream, error) {
	return t.c.Assignments(ctx, req)
}

func (t connectTransport) Heartbeat(ctx context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	return t.c.Heartbeat(ctx, req)
}

func (t connectTransport) ReportFinished(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	return t.c.ReportFinished(ctx, req)
}
