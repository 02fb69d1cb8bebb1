package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
	"batchd/server"
	"batchd/store"
)

// clock is a settable clock for the server under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
	// step advances the clock after each reading (0: pinned), as a real
	// one moves between one reading and the next.
	step time.Duration
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// bundle is a server under test with clients of every service.
type bundle struct {
	srv     *server.Server
	http    *httptest.Server
	clock   *clock
	dir     string
	tasks   batchv1connect.TaskSetServiceClient
	workers batchv1connect.WorkerServiceClient
	billing batchv1connect.BillingServiceClient
	cluster batchv1connect.ClusterServiceClient
	users   batchv1connect.UserServiceClient
	control batchv1connect.TaskSetControlServiceClient
}

// adminToken reads the first admin's token that the server wrote into dir.
func adminToken(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, server.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// withToken is a client option that sends the bearer token.
func withToken(token string) connect.ClientOption {
	return connect.WithInterceptors(client.BearerInterceptor(token))
}

type options struct {
	dir   string
	clock *clock
	sched sched.Config
	cap   int64
	// keepTask is Config.KeepMaxTask (0: the default).
	keepTask int64

	rate               float64 // 0: no rate limit in tests
	burst              int
	maxSets, maxQueued int
	prices             store.Prices
	noFair             bool // plain FCFS in the disclosed class
	keepalive          time.Duration
	shareUnisolated    bool // Config.ShareUnisolated
	taskDirs           []string
	pilotLosses        int // Config.PilotLosses (0: the default)
}

// logger discards logs unless BATCHD_TEST_LOG is set.
func logger() *slog.Logger {
	if os.Getenv("BATCHD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// setup starts a server on a temp dir with a pinned clock, served by
// httptest on 127.0.0.1; the dispatch loop does not run (tests call
// DispatchOnce).
func setup(t testing.TB, o options) *bundle {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.clock == nil {
		o.clock = newClock()
	}
	if o.sched.Speculation == "" {
		o.sched.Speculation = sched.SpecNone
	}
	if o.rate == 0 {
		o.rate = -1 // the clock is pinned: a bucket would never refill
	}
	// HeartbeatWait: a heartbeat's answer carries what its write found
	// (kills, errors) and follows its progress however slow the machine;
	// the answer before the write has tests of its own (internal ones).
	srv, err := server.New(server.Config{DataDir: o.dir, Now: o.clock.Now, TickInterval: -1, Logger: logger(),
		HeartbeatWait: time.Minute, Sched: o.sched, OutputCap: o.cap, KeepMaxTask: o.keepTask, Lease: 15 * time.Second, RequestRate: o.rate, RequestBurst: o.burst,
		MaxOpenSets: o.maxSets, MaxQueuedTasks: o.maxQueued, Prices: o.prices, NoDisclosedFairShare: o.noFair,
		WatchKeepalive: o.keepalive, ShareUnisolated: o.shareUnisolated, TaskDirs: o.taskDirs,
		PilotLosses: o.pilotLosses})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	admin := withToken(adminToken(t, o.dir))
	wk := withToken(srv.LocalWorkerToken())
	b := &bundle{srv: srv, http: hs, clock: o.clock, dir: o.dir,
		tasks:   batchv1connect.NewTaskSetServiceClient(hs.Client(), hs.URL, admin),
		workers: batchv1connect.NewWorkerServiceClient(hs.Client(), hs.URL, wk),
		billing: batchv1connect.NewBillingServiceClient(hs.Client(), hs.URL, admin),
		cluster: batchv1connect.NewClusterServiceClient(hs.Client(), hs.URL, admin),
		users:   batchv1connect.NewUserServiceClient(hs.Client(), hs.URL, admin),
		control: batchv1connect.NewTaskSetControlServiceClient(hs.Client(), hs.URL, admin),
	}
	t.Cleanup(b.close)
	return b
}

func (b *bundle) close() {
	b.http.CloseClientConnections()
	b.srv.Close()
	b.http.Close()
}

// patience bounds a wait for something that must happen, so that a hang
// fails with a message before go test's -timeout; it is no measurement,
// and a machine at load 30 stays far inside it.
const patience = 3 * time.Minute

func ctx(t testing.TB) context.Context {
	// No deadline: a loaded machine may take long, and go test's -timeout
	// bounds a hang. The context ends with the test.
	return t.Context()
}

func specs(argv ...[]string) []*batchv1.TaskSpec {
	var out []*batchv1.TaskSpec
	for _, a := range argv {
		out = append(out, &batchv1.TaskSpec{Argv: a})
	}
	return out
}

func echo(n int) []*batchv1.TaskSpec {
	var out []*batchv1.TaskSpec
	for i := 0; i < n; i++ {
		out = append(out, &batchv1.TaskSpec{Argv: []string{"echo", "task", string(rune('a' + i%26))}})
	}
	return out
}

func wantCode(t *testing.T, err error, want connect.Code) {
	t.Helper()
	if got := connect.CodeOf(err); err == nil || got != want {
		t.Fatalf("error %v: got code %v, want %v", err, got, want)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var _ = http.StatusOK

func newTaskClient(hc *http.Client, url, token string) batchv1connect.TaskSetServiceClient {
	return batchv1connect.NewTaskSetServiceClient(hc, url, withToken(token))
}

// discloseStream sends first, then each of more, as one DiscloseStream.
func discloseStream(ctx context.Context, c batchv1connect.TaskSetServiceClient, first *batchv1.DiscloseStreamRequest, more ...*batchv1.DiscloseStreamRequest) (*batchv1.DiscloseStreamResponse, error) {
	st, err := c.DiscloseStream(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range append([]*batchv1.DiscloseStreamRequest{first}, more...) {
		if err := st.Send(m); err != nil {
			break // the server has answered: CloseAndReceive says what
		}
	}
	return st.CloseAndReceive()
}
