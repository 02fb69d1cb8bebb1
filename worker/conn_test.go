// Tests of the agent's talk with the server: restarts, re-registration,
// refused reports, stops and the state directory.

package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// TestServerRestart: a copy ends while the server is down; the restarted
// server does not know the worker, which registers again listing the held
// copy, and the result is delivered exactly once.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.hb = 0.1 })
	gate := filepath.Join(b.dir, "go")
	b.srv.startCopy(5, 2, sh(`while [ ! -e `+gate+` ]; do sleep 0.02; done; echo result`))
	b.srv.startCopy(6, 3, sh(`while :; do sleep 1; done`))
	b.srv.waitFor("copies in heartbeat", func() bool {
		n := len(b.srv.heartbeats)
		return n > 0 && len(b.srv.heartbeats[n-1].Copies) == 2
	})
	registers := func() int { b.srv.mu.Lock(); defer b.srv.mu.Unlock(); return len(b.srv.registers) }()

	b.srv.stop()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "copy 5 result held", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		c := b.a.copies[5]
		return c != nil && c.result != nil
	})
	if n := b.srv.reportCount(5); n != 0 {
		t.Fatalf("%d reports while the server was down", n)
	}
	b.srv.start()

	r := b.srv.report(5)
	if got, want := string(r.Stdout), "result\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	b.srv.mu.Lock()
	if len(b.srv.registers) <= registers {
		t.Fatal("no new Register after the restart")
	}
	var held []int64
	for _, h := range b.srv.registers[registers].Running {
		held = append(held, h.CopyId)
		if h.CopyId == 6 && (h.StartedAt == nil || h.Slot != 3) {
			t.Errorf("held copy 6 = %v, want slot 3 and a start time", h)
		}
	}
	b.srv.mu.Unlock()
	if got, want := held, []int64{5, 6}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("re-register running = %v, want %v", got, want)
	}
	// Copy 6 kept running through the outage and still heartbeats.
	b.srv.waitFor("copy 6 heartbeat after restart", func() bool {
		n := len(b.srv.heartbeats)
		return n > 0 && len(b.srv.heartbeats[n-1].Copies) == 1 && b.srv.heartbeats[n-1].Copies[0].CopyId == 6
	})
	if n := b.srv.reportCount(5); n != 1 {
		t.Errorf("copy 5 reported %d times, want 1", n)
	}
	if n := b.srv.reportCount(6); n != 0 {
		t.Errorf("copy 6 reported %d times while running", n)
	}
}

func TestGRPCProtocol(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) { c.ClientOptions = []connect.ClientOption{connect.WithGRPC()} })
	b.srv.startCopy(1, 0, sh(`echo grpc; exit 2`))
	if r := b.srv.report(1); string(r.Stdout) != "grpc\n" || r.ExitCode != 2 {
		t.Errorf("report over gRPC: stdout %q, exit %d", r.Stdout, r.ExitCode)
	}
}

func TestHeartbeatNotFoundReregisters(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.hb = 0.05 })
	b.srv.startCopy(1, 0, sh(`while :; do sleep 1; done`))
	b.srv.waitFor("copy in heartbeat", func() bool {
		n := len(b.srv.heartbeats)
		return n > 0 && len(b.srv.heartbeats[n-1].Copies) == 1
	})
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 1}})
	eventually(t, "copy suspended", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		return b.a.copies[1].state == copySuspended
	})
	b.srv.mu.Lock()
	b.srv.known = map[string]bool{} // the server forgets the worker (lapsed lease)
	n := len(b.srv.registers)
	b.srv.mu.Unlock()
	b.srv.waitFor("register again", func() bool {
		return len(b.srv.registers) > n && len(b.srv.registers[n].Running) == 1 && b.srv.registers[n].Running[0].CopyId == 1
	})
	b.srv.mu.Lock()
	if !b.srv.registers[n].Running[0].Suspended {
		t.Error("held copy not marked suspended on Register")
	}
	b.srv.mu.Unlock()
	b.srv.waitFor("stream open again", func() bool { return b.srv.streams > 0 })
}

func TestKillLists(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.hb = 0.05 })
	b.srv.startCopy(1, 0, sh(`while :; do sleep 1; done`))
	b.srv.startCopy(2, 1, sh(`while :; do sleep 1; done`))
	b.srv.waitFor("copies in heartbeat", func() bool {
		n := len(b.srv.heartbeats)
		return n > 0 && len(b.srv.heartbeats[n-1].Copies) == 2
	})
	// A heartbeat answer's kill list.
	b.srv.mu.Lock()
	b.srv.hbKill = []int64{1}
	b.srv.mu.Unlock()
	if r := b.srv.report(1); !r.Killed {
		t.Errorf("copy 1 killed = false")
	}
	// A Register answer's kill list.
	b.srv.mu.Lock()
	b.srv.registerKill = []int64{2}
	b.srv.known = map[string]bool{}
	b.srv.mu.Unlock()
	if r := b.srv.report(2); !r.Killed {
		t.Errorf("copy 2 killed = false")
	}
}

func TestRefusedReportDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.srv.mu.Lock()
	b.srv.refuse[1] = connect.CodeFailedPrecondition
	b.srv.mu.Unlock()
	b.srv.startCopy(1, 0, sh(`true`))
	b.srv.report(1)
	eventually(t, "copy forgotten", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		return len(b.a.copies) == 0
	})
	if n := b.srv.reportCount(1); n != 1 {
		t.Errorf("refused report sent %d times, want 1", n)
	}
}

func TestDuplicateStartIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	gate := filepath.Join(b.dir, "go")
	count := filepath.Join(b.dir, "count")
	spec := sh(`echo x >> ` + count + `; while [ ! -e ` + gate + ` ]; do sleep 0.02; done`)
	b.srv.startCopy(1, 0, spec)
	b.srv.startCopy(1, 0, spec)
	b.srv.startCopy(2, 1, sh(`true`)) // orders are handled in sequence
	b.srv.report(2)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.srv.report(1)
	got, _ := os.ReadFile(count)
	if string(got) != "x\n" {
		t.Errorf("copy ran %q, want once", got)
	}
}

func TestGracefulStop(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	pidFile := filepath.Join(b.dir, "pid")
	b.srv.startCopy(1, 0, sh(`sleep 1000 & echo $! > `+pidFile+`; wait`))
	b.srv.startCopy(2, 1, sh(`echo $$ >> `+pidFile+`.2; exec sleep 1000`))
	pids := append(readPIDs(t, pidFile, 1), readPIDs(t, pidFile+".2", 1)...)
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 2}})
	eventually(t, "copy 2 stopped", func() bool { st, _ := readProcStat(pids[1]); return st.State == 'T' })
	if err := b.stop(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	for _, id := range []int64{1, 2} {
		if n := b.srv.reportCount(id); n != 1 {
			t.Fatalf("copy %d reported %d times, want 1", id, n)
		}
		if r := b.srv.report(id); !r.Killed {
			t.Errorf("copy %d killed = false, want true", id)
		}
	}
	for _, p := range pids {
		// SIGKILL went to the copies' process groups before Run returned;
		// a grandchild (copy 1's background sleep) dies once the kernel
		// gets to it, which on a loaded machine can be a moment later.
		eventually(t, fmt.Sprintf("pid %d to die", p), func() bool { return !alive(p) })
	}
	b.srv.mu.Lock()
	last := b.srv.registers[len(b.srv.registers)-1]
	b.srv.mu.Unlock()
	if last.Slots != 0 {
		t.Errorf("last Register has %d slots, want 0 (no more work)", last.Slots)
	}
}

func TestStopUndelivered(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t)
	a, err := newAgent(Config{
		Server: srv.url(), Name: "w-drain", StateDir: t.TempDir(),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		DrainTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reapState(t, a.stateDir) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })
	srv.startCopy(1, 0, sh(`exec sleep 1000`))
	eventually(t, "copy running", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		c := a.copies[1]
		return c != nil && c.state == copyRunning
	})
	srv.stop()
	cancel()
	if err := <-done; err == nil {
		t.Error("Run = nil with an undelivered result, want an error")
	}
}

// TestCopiesDieWithAgent runs the agent as a child process (this test
// binary), kills it with SIGKILL, and checks its copy dies too (Pdeathsig).
func TestCopiesDieWithAgent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BATCHD_TEST_AGENT="+srv.url(), "BATCHD_TEST_STATE="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); reapState(t, dir) }()
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })
	pidFile := filepath.Join(dir, "pid")
	srv.startCopy(1, 0, sh(`echo $$ > `+pidFile+`; exec sleep 1000`))
	pid := readPIDs(t, pidFile, 1)[0]
	if !alive(pid) {
		t.Fatal("copy not running")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	eventually(t, "copy gone with the agent", func() bool { return !alive(pid) })
}

// TestLeftoversKilledOnRestart: Pdeathsig reaches only a copy's leader, so
// a grandchild outlives a killed agent; the next agent on the same state
// directory kills it.
func TestLeftoversKilledOnRestart(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t)
	state, dir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BATCHD_TEST_AGENT="+srv.url(), "BATCHD_TEST_STATE="+state)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); reapState(t, state) }()
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })
	pidFile := filepath.Join(dir, "pids")
	srv.startCopy(1, 0, sh(`sleep 1000 & echo $! > `+pidFile+`; echo $$ >> `+pidFile+`; wait`))
	pids := readPIDs(t, pidFile, 2)
	grandchild, leader := pids[0], pids[1]
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	eventually(t, "leader gone with the agent", func() bool { return !alive(leader) })
	if !alive(grandchild) {
		t.Fatal("grandchild died with the agent; this test's premise does not hold here")
	}

	a, err := newAgent(Config{Server: srv.url(), StateDir: state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Isolation: IsolationNone})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.name, readName(state); got != want || got == "" {
		t.Errorf("name = %q, want the child's %q", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "grandchild killed by the next agent", func() bool { return !alive(grandchild) })
}

func TestStateDir(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t)
	state := t.TempDir()
	cfg := Config{Server: srv.url(), StateDir: state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := newAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	defer func() { cancel(); <-done }()
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })

	t.Run("NameKept", func(t *testing.T) {
		b, err := newAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if b.name != a.name || !strings.HasPrefix(a.name, a.hostname+"-") || len(a.name) != len(a.hostname)+7 {
			t.Errorf("names %q, %q; want the same hostname-6hex", a.name, b.name)
		}
	})
	t.Run("ErrLocked", func(t *testing.T) {
		err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Errorf("second Run on the same state dir = %v, want in-use error", err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	if err := Run(context.Background(), Config{}); err == nil {
		t.Error("Run without a server URL = nil, want an error")
	}
}
