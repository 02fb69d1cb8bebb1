package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
)

// startServe runs `batchd serve` in-process with args after "serve" until ctx
// ends. It returns the URL from the "serving on" line, or "" and the
// command's error when it returned before serving.
func startServe(t *testing.T, ctx context.Context, args ...string) (url string, done <-chan error) {
	t.Helper()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- newApp(outW, io.Discard).RunContext(ctx, append([]string{"batchd", "serve"}, args...))
		outW.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "batchd serving on "); ok {
				urls <- strings.Fields(rest)[0]
			}
		}
		close(urls)
	}()
	url = <-urls // closed when the command returns without serving
	go io.Copy(io.Discard, outR)
	return url, errc
}

// These tests do not run in parallel: urfave/cli's shared help flags race
// when two apps parse at once.

// A second `batchd serve` on a data directory in use exits with
// ErrDataDirInUse naming the first one's pid and serves nothing; the first
// keeps serving and accepts work.
func TestServeTwiceOnOneDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	url, done := startServe(t, ctx, "--listen", "127.0.0.1:0", "--data", dir, "--slots", "0")
	if url == "" {
		t.Fatalf("first serve: %v", <-done)
	}

	url2, done2 := startServe(t, ctx, "--listen", "127.0.0.1:0", "--data", dir, "--slots", "0")
	if url2 != "" {
		t.Fatalf("a second server serves %s on the first one's data directory", url2)
	}
	err := <-done2
	var inUse *server.DataDirInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, server.ErrDataDirInUse) {
		t.Fatalf("second serve: %v, want ErrDataDirInUse", err)
	}
	if got, want := inUse.PID, os.Getpid(); got != want {
		t.Errorf("holder pid %d, want %d", got, want)
	}

	tok, err := os.ReadFile(filepath.Join(dir, server.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url,
		connect.WithInterceptors(client.BearerInterceptor(strings.TrimSpace(string(tok)))))
	if _, err := c.Disclose(ctx, &batchv1.DiscloseRequest{Request: true, Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}}}); err != nil {
		t.Fatalf("first server after the refused start: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// `batchd serve` on a busy port fails and creates nothing: no data
// directory, database or admin token.
func TestServeBusyPortCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "data")
	url, done := startServe(t, context.Background(), "--listen", busy.Addr().String(), "--data", dir, "--slots", "0")
	if url != "" {
		t.Fatalf("serving on %s beside a busy port", url)
	}
	if err := <-done; err == nil {
		t.Fatal("serve on a busy port returned no error")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data directory after a failed start: %v, want it absent", err)
	}
}
