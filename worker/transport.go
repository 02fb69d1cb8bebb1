package worker

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// ConnectTransport speaks the worker protocol over Connect to the server at
// baseURL, with hc (NewHTTPClient() when nil). The agent neither sends nor
// accepts compressed messages: they are small, and gzip cost more CPU than
// the bytes it saved (flate's reset was the largest symbol of a profile of
// the dispatch path).
func ConnectTransport(hc *http.Client, baseURL string, opts ...connect.ClientOption) wire.Transport {
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

func (t connectTransport) Assignments(ctx context.Context, req *batchv1.AssignmentsRequest) (wire.AssignmentStream, error) {
	return t.c.Assignments(ctx, req)
}

func (t connectTransport) Heartbeat(ctx context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	return t.c.Heartbeat(ctx, req)
}

func (t connectTransport) ReportFinished(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	return t.c.ReportFinished(ctx, req)
}

// ReportFinishedMany makes connectTransport a wire.ManyReporter.
func (t connectTransport) ReportFinishedMany(ctx context.Context, req *batchv1.ReportFinishedManyRequest) (*batchv1.ReportFinishedManyResponse, error) {
	return t.c.ReportFinishedMany(ctx, req)
}

func (t connectTransport) ReportOutput(ctx context.Context, req *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error) {
	return t.c.ReportOutput(ctx, req)
}
