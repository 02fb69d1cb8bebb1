package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
	"batchd/server"
	"batchd/store"
)

// The tests here do not run in parallel: urfave/cli v2 writes its global
// HelpFlag on every run, a data race between apps run at once.

func TestWorkerCommandHelp(t *testing.T) {
	var out bytes.Buffer
	if err := newApp(&out, &out).Run([]string{"batchd", "worker", "--help"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--server", "BATCH_SERVER", "--slots", "--name", "--state-dir", "SIGTERM", "BATCH_PROGRESS_FILE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("worker --help does not mention %s", want)
		}
	}
}

func TestWorkerCommandNeedsServer(t *testing.T) {
	var out bytes.Buffer
	if err := newApp(&out, &out).Run([]string{"batchd", "worker", "--state-dir", t.TempDir()}); err == nil {
		t.Error("worker without --server = nil error, want an error")
	}
}

// TestWorkerCommandStop runs `batchd worker` against a real server, then
// cancels its context as SIGTERM does (main's NotifyContext): the running
// copy is killed and reported, no copy stays running on the server, the
// task waits to run again, and the command returns nil.
func TestWorkerCommandStop(t *testing.T) {
	// ShareUnisolated: its worker may report no isolation; these tests are
	// not about isolation (server/isolation_test.go is).
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: 50 * time.Millisecond, ShareUnisolated: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, wtok, err := srv.DB().AddUser(ctx, store.AddUserInput{Name: "wk", Role: store.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- newApp(&logs, &logs).RunContext(wctx, []string{"batchd", "worker",
			"--server", srv.URL(), "--token", wtok, "--slots", "1", "--name", "w-cmd", "--state-dir", t.TempDir()})
	}()
	defer func() { stop(); <-done }()

	c := client.New(client.Config{Server: srv.URL(), HTTPClient: client.WithToken(nil, srv.AdminToken())})
	d, err := c.Disclose(ctx, client.DiscloseInput{Name: "long", Request: true,
		Tasks: []sched.TaskSpec{{Argv: []string{"sleep", "1000"}}}})
	if err != nil {
		t.Fatal(err)
	}
	task := func() sched.Task {
		t.Helper()
		page, err := c.GetTaskSet(ctx, client.GetTaskSetInput{Set: d.Set.ID})
		if err != nil {
			t.Fatal(err)
		}
		return page.Tasks[0]
	}
	for tk := task(); len(tk.Copies) == 0 || tk.Copies[0].State != sched.CopyRunning; tk = task() {
		if ctx.Err() != nil {
			t.Fatal("the copy never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker returned %v, want nil\n%s", err, logs.String())
	}
	done <- nil // for the deferred stop
	// Whatever the server assigned here is over (killed or lost: never
	// billed), at once rather than a lease later.
	tk := task()
	for _, cp := range tk.Copies {
		if cp.State != sched.CopyKilled && cp.State != sched.CopyLost {
			t.Errorf("copy %d is %s after the worker stopped, want killed or lost\n%s", cp.ID, cp.State, logs.String())
		}
	}
	if tk.State != sched.TaskRequested {
		t.Errorf("task state = %s, want %s (to run again)", tk.State, sched.TaskRequested)
	}
}
