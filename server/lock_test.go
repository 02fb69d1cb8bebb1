package server_test

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
)

// A second server on a data directory that a running server holds fails
// with ErrDataDirInUse naming the holder's pid, listens on nothing, and the
// first server goes on serving; once the first closes, the directory can be
// used again.
func TestDataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: dir, TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	second, err := server.New(server.Config{Listener: ln, DataDir: dir, TickInterval: -1})
	if err == nil {
		second.Close()
		t.Fatal("a second server started on a data directory in use")
	}
	var inUse *server.DataDirInUseError
	if !errors.Is(err, server.ErrDataDirInUse) || !errors.As(err, &inUse) {
		t.Fatalf("second server: %v, want ErrDataDirInUse", err)
	}
	if got, want := inUse.PID, os.Getpid(); got != want {
		t.Errorf("holder pid %d, want %d", got, want)
	}
	// The second server closed the listener it was given.
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("the refused server's port still answers")
	}

	c := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, first.URL(), withToken(first.AdminToken()))
	if _, err := c.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}); err != nil {
		t.Fatalf("first server after the refused start: %v", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := server.New(server.Config{DataDir: dir, TickInterval: -1})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	again.Close()
}

// A start on a busy port fails before it creates anything: no data
// directory, no database, no admin token.
func TestBusyPortCreatesNothing(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	srv, err := server.New(server.Config{Listen: busy.Addr().String(), DataDir: dir, TickInterval: -1})
	if err == nil {
		srv.Close()
		t.Fatal("started on a busy port")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data directory after a failed start: %v, want it absent", err)
	}
}
