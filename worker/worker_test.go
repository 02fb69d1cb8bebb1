package worker

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// patience bounds a wait for something that must happen, so that a hang
// fails with a message before go test's -timeout; it is no measurement,
// and a machine at load 30 stays far inside it.
const patience = 3 * time.Minute

// bundle is one agent running against one fake server.
type bundle struct {
	t      *testing.T
	srv    *fakeServer
	a      *agent
	dir    string // a scratch directory for the test's own files
	cancel context.CancelFunc
	done   chan error
}

// setup starts a fake server (adjusted by tweak before the agent starts) and
// an agent against it, and waits until the agent's stream is open.
func setup(t *testing.T, tweak func(*fakeServer)) *bundle {
	t.Helper()
	return setupWith(t, tweak, nil)
}

// setupWith is setup with a hook to adjust the agent's Config.
func setupWith(t *testing.T, tweak func(*fakeServer), tweakCfg func(*Config)) *bundle {
	t.Helper()
	return setupAgent(t, tweak, tweakCfg, nil)
}

// setupAgent is setupWith with a hook to adjust the agent before it runs
// (its clock, say).
func setupAgent(t *testing.T, tweak func(*fakeServer), tweakCfg func(*Config), tweakAgent func(*agent)) *bundle {
	t.Helper()
	srv := newFakeServer(t)
	if tweak != nil {
		tweak(srv)
	}
	b := &bundle{t: t, srv: srv, dir: t.TempDir(), done: make(chan error, 1)}
	cfg := Config{
		Server:       srv.url(),
		Name:         "w-test",
		Slots:        4,
		StateDir:     t.TempDir(),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: 20 * time.Millisecond,
		DrainTimeout: 5 * time.Second,
		// The tests of the agent's behaviour run copies as the test's
		// user; isolation_test.go runs them isolated.
		Isolation: IsolationNone,
	}
	if tweakCfg != nil {
		tweakCfg(&cfg)
	}
	a, err := newAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tweakAgent != nil {
		tweakAgent(a)
	}
	b.a = a
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- a.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(patience):
			t.Error("agent did not stop")
		}
		reapState(t, a.stateDir)
	})
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })
	return b
}

// stop cancels the agent and returns Run's error.
func (b *bundle) stop() error {
	b.t.Helper()
	b.cancel()
	select {
	case err := <-b.done:
		b.done <- err // for Cleanup
		return err
	case <-time.After(patience):
		b.t.Fatal("agent did not stop")
		return nil
	}
}

// reapState kills any process of a copy run on state dir that is still
// alive when a test ends (only after a failure), so that a failing test
// leaves nothing behind. It matches processes by their BATCH_PROGRESS_FILE,
// never by pid alone.
func reapState(t *testing.T, state string) {
	if n, _ := killLeftovers(filepath.Join(state, "copies") + "/"); n > 0 {
		t.Errorf("%d processes of copies outlived the test", n)
	}
}

// eventually polls cond (for state outside the fake server: /proc, files).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPIDs waits for path to hold n newline-terminated pids and returns them.
func readPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	eventually(t, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				return false
			}
			pids = append(pids, p)
		}
		return len(pids) >= n
	})
	return pids
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, err := readProcStat(pid)
	return err == nil && st.State != 'Z'
}

func sh(script string) *batchv1.TaskSpec {
	return &batchv1.TaskSpec{Argv: []string{"sh", "-c", script}}
}

// TestMain doubles as the agent process of TestCopiesDieWithAgent.
func TestMain(m *testing.M) {
	if url := os.Getenv("BATCHD_TEST_AGENT"); url != "" {
		err := Run(context.Background(), Config{
			Server: url, StateDir: os.Getenv("BATCHD_TEST_STATE"),
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			Isolation: Isolation(cmp.Or(os.Getenv("BATCHD_TEST_ISOLATION"), string(IsolationNone))),
		})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkCopyRoundTrip measures one copy of `true` from the start order
// on the stream to its report at the server: fork/exec, pipes, reaping,
// the group kill and the ReportFinished call.
func BenchmarkCopyRoundTrip(b *testing.B) {
	srv := newFakeServer(b)
	// BATCHD_BENCH_ISOLATION picks the isolation (default none), so that
	// the cost of each mechanism per copy can be compared.
	a, err := newAgent(Config{Server: srv.url(), Name: "w-bench", Slots: 1, StateDir: b.TempDir(),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Isolation: Isolation(cmp.Or(os.Getenv("BATCHD_BENCH_ISOLATION"), string(IsolationNone)))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	defer func() { cancel(); <-done }()
	srv.waitFor("stream open", func() bool { return srv.streams > 0 })
	spec := &batchv1.TaskSpec{Argv: []string{"true"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		srv.startCopy(int64(i+1), 0, spec)
		srv.report(int64(i + 1))
	}
}
