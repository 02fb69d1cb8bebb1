package server_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/protobuf/reflect/protoreflect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
	"batchd/worker"
)

// One port serves Connect, gRPC (over h2c) and gRPC-Web, and gRPC server
// reflection lists every service.
func TestProtocols(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h2c := worker.NewHTTPClient() // HTTP/2 with prior knowledge, no TLS
	for _, tc := range []struct {
		name string
		opts []connect.ClientOption
	}{
		{"Connect", nil},
		{"GRPC", []connect.ClientOption{connect.WithGRPC()}},
		{"GRPCWeb", []connect.ClientOption{connect.WithGRPCWeb()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := batchv1connect.NewTaskSetServiceClient(h2c, srv.URL(), append(tc.opts, withToken(srv.AdminToken()))...)
			res, err := c.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})
			if err != nil || res.Count != 1 {
				t.Fatalf("disclose: %v %v", res, err)
			}
			_, err = c.Disclose(ctx(t), &batchv1.DiscloseRequest{})
			wantCode(t, err, connect.CodeInvalidArgument)
		})
	}
	stream := grpcreflect.NewClient(h2c, srv.URL()).NewStream(ctx(t))
	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	stream.Close()
	for _, want := range []string{"batch.v1.TaskSetService", "batch.v1.WorkerService", "batch.v1.BillingService", "batch.v1.ClusterService", "grpc.health.v1.Health"} {
		found := slices.ContainsFunc(names, func(n protoreflect.FullName) bool { return string(n) == want })
		if !found {
			t.Errorf("reflection lacks %s (has %v)", want, names)
		}
	}
}
