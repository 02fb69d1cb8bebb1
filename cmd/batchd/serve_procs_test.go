package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/internal/promtext"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/server"
)

// goProcs reads batchd_go_procs and batchd_go_procs_changes_total from
// the server's /metrics.
func goProcs(t *testing.T, url string) (procs, changes int) {
	t.Helper()
	m, err := promtext.Read(url)
	if err != nil {
		t.Fatal(err)
	}
	return int(m["batchd_go_procs"]), int(m["batchd_go_procs_changes_total"])
}

// By default, `batchd serve` runs 1 Go processor per CPU (at least 2)
// while only workers call and 2 per CPU (at least 4) from an API call
// until 2 s after the last; --procs N fixes N.
func TestServeProcsFollowAPICalls(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	cpus := runtime.GOMAXPROCS(0) // what serve reads as the CPUs
	defer runtime.GOMAXPROCS(cpus)
	low, high := workerProcs(cpus), serveProcs(cpus)

	dir := filepath.Join(t.TempDir(), "data")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	url, done := startServe(t, ctx, "--listen", "127.0.0.1:0", "--data", dir, "--slots", "0")
	if url == "" {
		t.Fatalf("serve: %v", <-done)
	}
	// waitProcs waits until the server runs want processors after at
	// least changes changes (a hang guard only: nothing here depends on
	// how long anything takes).
	waitProcs := func(what string, want, changes int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			got, n := goProcs(t, url)
			if got == want && n >= changes {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: batchd_go_procs %d after %d changes, want %d after %d", what, got, n, want, changes)
			}
		}
	}
	waitProcs("idle, no API call yet", low, 1)
	tok, err := os.ReadFile(filepath.Join(dir, server.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url,
		connect.WithInterceptors(client.BearerInterceptor(strings.TrimSpace(string(tok)))))
	if _, err := c.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{}); err != nil {
		t.Fatal(err)
	}
	// Up to high at the call, and back to low 2 s after it: two changes
	// more. (High itself may be over before a slow machine looks.)
	if got, n := goProcs(t, url); got != high && n < 3 {
		waitProcs("after an API call", high, 2)
	}
	waitProcs("the hold after an API call", low, 3)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// --procs fixes the processors: no change after an API call.
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	url, done = startServe(t, ctx, "--listen", "127.0.0.1:0", "--data", dir, "--slots", "0", "--procs", "3")
	if url == "" {
		t.Fatalf("serve --procs 3: %v", <-done)
	}
	c = batchv1connect.NewTaskSetServiceClient(http.DefaultClient, url,
		connect.WithInterceptors(client.BearerInterceptor(strings.TrimSpace(string(tok)))))
	if _, err := c.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{}); err != nil {
		t.Fatal(err)
	}
	if p, n := goProcs(t, url); p != 3 || n != 0 {
		t.Errorf("--procs 3: batchd_go_procs %d, changes %d; want 3 and 0", p, n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
