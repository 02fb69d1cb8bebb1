package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/sched"
	"batchd/server"
	"batchd/store"
	"batchd/worker"
)

// startReal starts a real server on listen with its data in data, which
// shares workers without isolation.
func startReal(t *testing.T, data, listen string) *server.Server {
	t.Helper()
	return startRealWith(t, data, listen, true)
}

// startRealWith starts a real server that shares workers without
// isolation or not.
func startRealWith(t *testing.T, data, listen string, shareUnisolated bool) *server.Server {
	t.Helper()
	var s *server.Server
	var err error
	for i := 0; i < 100; i++ { // the old listener's port may linger briefly
		if s, err = server.New(server.Config{Listen: listen, DataDir: data, Lease: 3 * time.Second, TickInterval: 50 * time.Millisecond,
			ShareUnisolated: shareUnisolated}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitFile polls for path to exist with a complete line and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute) // a bound on a hang, not a measurement
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRealServerRestart runs the agent against the real server. A requested
// task's copy ends while the server is down; the restarted server (same data
// dir and address) does not know the worker, which registers again listing
// the held copy, and the held result becomes the task's: one copy, won,
// output readable, billed once.
func TestRealServerRestart(t *testing.T) {
	t.Parallel()
	data, dir := t.TempDir(), t.TempDir()
	s1 := startReal(t, data, "127.0.0.1:0")
	addr := s1.Addr().String()
	url := "http://" + addr

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// A stored worker token outlives the server process (the embedded
	// slots' in-memory one would not).
	_, wtok, err := s1.DB().AddUser(ctx, store.AddUserInput{Name: "workers", Role: store.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(wctx, worker.Config{Server: url, Name: "w-real", Slots: 1, StateDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DrainTimeout: 2 * time.Second, Isolation: worker.IsolationNone,
			ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(wtok))}})
	}()
	defer func() { stop(); <-done }()

	c := client.New(client.Config{Server: url, RetryFor: time.Minute, HTTPClient: client.WithToken(nil, s1.AdminToken())})
	gate, pidFile := filepath.Join(dir, "go"), filepath.Join(dir, "pid")
	d, err := c.Disclose(ctx, client.DiscloseInput{Name: "restart", Request: true, Tasks: []sched.TaskSpec{{
		Argv: []string{"sh", "-c", `echo $$ > ` + pidFile + `; while [ ! -e ` + gate + ` ]; do sleep 0.02; done; echo "result $BATCH_COPY_ID"`},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(waitFile(t, pidFile))

	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The copy ends while no server listens; the agent holds its result.
	deadline := time.Now().Add(3 * time.Minute) // a bound on a hang, not a measurement
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("copy did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	startReal(t, data, addr)

	var task sched.Task
	err = c.Watch(ctx, d.Set.ID, func(u client.WatchUpdate) error {
		if u.Set.Counts.Finished == 1 {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.GetTaskSet(ctx, client.GetTaskSetInput{Set: d.Set.ID})
	if err != nil {
		t.Fatal(err)
	}
	task = page.Tasks[0]
	if len(task.Copies) != 1 || task.Copies[0].State != sched.CopyWon {
		t.Fatalf("copies = %+v, want the one held copy, won", task.Copies)
	}
	out, err := c.GetOutput(ctx, sched.TaskRef{Set: d.Set.ID, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Stdout), "result "+strconv.FormatInt(int64(task.Copies[0].ID), 10)+"\n"; got != want || out.ExitCode != 0 {
		t.Errorf("output = %q (exit %d), want %q (exit 0)", got, out.ExitCode, want)
	}
	bill, err := c.GetBill(ctx, client.BillInput{Set: d.Set.ID, Lines: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(bill.Lines); got != 1 {
		t.Errorf("bill has %d lines, want 1", got)
	}
}

// TestRealServerRefusesWorker: a worker with no token, or a user's token,
// or one that would run anyone's tasks without isolation, is refused by
// the real server at its first registration; Run stops with that error
// instead of retrying forever.
func TestRealServerRefusesWorker(t *testing.T) {
	t.Parallel()
	s := startRealWith(t, t.TempDir(), "127.0.0.1:0", false)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, userTok, err := s.DB().AddUser(ctx, store.AddUserInput{Name: "alice", Role: store.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	_, workerTok, err := s.DB().AddUser(ctx, store.AddUserInput{Name: "w-refused", Role: store.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		token     string
		isolation worker.Isolation
		want      connect.Code
	}{
		{"no token", "", "", connect.CodeUnauthenticated},
		{"wrong token", "bd_wrong", "", connect.CodeUnauthenticated},
		{"user token", userTok, "", connect.CodePermissionDenied},
		{"unisolated and bound to nobody", workerTok, worker.IsolationNone, connect.CodeFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []connect.ClientOption
			if tc.token != "" {
				opts = append(opts, connect.WithInterceptors(client.BearerInterceptor(tc.token)))
			}
			err := worker.Run(ctx, worker.Config{Server: s.URL(), Name: "w-refused", Slots: 1, StateDir: t.TempDir(), Isolation: tc.isolation,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ClientOptions: opts})
			if got := connect.CodeOf(err); got != tc.want {
				t.Fatalf("Run: %v (code %v), want code %v", err, got, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatal("Run retried until the test's deadline")
			}
		})
	}
}
