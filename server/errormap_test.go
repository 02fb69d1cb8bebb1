package server_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/server"
	"batchd/worker"
)

// Handlers return domain errors and the server maps them once: a coded
// error keeps its code and message, anything else reaches the caller as
// Internal without its text. The same over Connect, gRPC and the in-process
// transport of the embedded worker slots, for unary calls and streams.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A heartbeat's answer waits for its write's error, however slow the
	// machine: by default it waits 20 ms and is then answered without it.
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: dir, TickInterval: -1, Logger: logger(),
		HeartbeatWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h2c := worker.NewHTTPClient()
	tok := withToken(srv.LocalWorkerToken())
	transports := []struct {
		name string
		t    wire.Transport
	}{
		{"Connect", worker.ConnectTransport(h2c, srv.URL(), tok)},
		{"GRPC", worker.ConnectTransport(h2c, srv.URL(), connect.WithGRPC(), tok)},
		{"InProcess", srv.LocalTransport()},
	}

	// Worker w1 holds a copy whose spec the store cannot decode, and the
	// workers table refuses every update: its heartbeats and its
	// assignment streams fail with errors that carry no code.
	tasks := newTaskClient(h2c, srv.URL(), srv.AdminToken())
	if _, err := tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.LocalTransport().Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w1", Slots: 1}); err != nil {
		t.Fatal(err)
	}
	srv.DispatchOnce()
	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "batchd.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`UPDATE tasks SET spec = 'secret-spec-text' WHERE idx = 0`,
		`CREATE TRIGGER no_heartbeat BEFORE UPDATE ON workers BEGIN SELECT RAISE(ABORT, 'secret-trigger-text'); END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}

	// assignmentsErr opens an Assignments stream and returns its error,
	// from the call or from the stream.
	assignmentsErr := func(t *testing.T, tr wire.Transport, id string) error {
		st, err := tr.Assignments(ctx(t), &batchv1.AssignmentsRequest{WorkerId: id})
		if err != nil {
			return err
		}
		defer st.Close()
		for st.Receive() {
		}
		return st.Err()
	}
	internal := func(t *testing.T, what string, err error) {
		t.Helper()
		wantCode(t, err, connect.CodeInternal)
		if msg := err.Error(); strings.Contains(msg, "secret") || strings.Contains(msg, "sql") || strings.Contains(msg, "spec") {
			t.Errorf("%s: error %q carries internal text", what, msg)
		}
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, err := tr.t.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "nobody"})
			wantCode(t, err, connect.CodeNotFound)
			if msg := err.Error(); !strings.Contains(msg, "nobody") {
				t.Errorf("coded error %q lost its message", msg)
			}
			wantCode(t, assignmentsErr(t, tr.t, "nobody"), connect.CodeNotFound)
			_, err = tr.t.Register(ctx(t), &batchv1.RegisterRequest{Slots: 1})
			wantCode(t, err, connect.CodeInvalidArgument)
			_, err = tr.t.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: 99})
			wantCode(t, err, connect.CodeFailedPrecondition)

			_, err = tr.t.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w1"})
			internal(t, "heartbeat", err)
			internal(t, "assignments", assignmentsErr(t, tr.t, "w1"))
		})
	}
}
