package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/sched"
	"batchd/server"
	"batchd/worker"
)

// startServer runs a real server on 127.0.0.1:0 with a temp data dir and,
// when slots > 0, a real worker agent with that many slots.
func startServer(t *testing.T, slots int) string {
	t.Helper()
	return startServerWith(t, slots, server.Config{})
}

// startServerWith is startServer with cfg's other fields.
func startServerWith(t *testing.T, slots int, cfg server.Config) string {
	t.Helper()
	// ShareUnisolated: its worker may report no isolation; these tests are
	// not about isolation (server/isolation_test.go is).
	cfg.Listen, cfg.DataDir, cfg.Lease, cfg.ShareUnisolated = "127.0.0.1:0", t.TempDir(), 2*time.Second, true
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if slots > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = worker.Run(ctx, worker.Config{
				Server: srv.URL(), Name: "test-worker", Slots: slots, StateDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DrainTimeout: time.Second,
				ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(srv.LocalWorkerToken()))},
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	tokens.Store(srv.URL(), srv.AdminToken())
	return srv.URL()
}

// tokens holds the admin token of each test server, by URL.
var tokens sync.Map

// authed returns an HTTP client through hc (nil: default) that sends the
// admin token of the server at url.
func authed(hc *http.Client, url string) *http.Client {
	tok, _ := tokens.Load(url)
	return client.WithToken(hc, tok.(string))
}

// newTestClient starts a server (with slots worker slots) and returns an
// admin's client of it.
func newTestClient(t *testing.T, slots int) *client.Client {
	url := startServer(t, slots)
	return client.New(client.Config{Server: url, HTTPClient: authed(nil, url)})
}

// lossyTransport forwards requests but, while drop > 0, throws the answer
// away and reports a network error, as when a connection breaks after the
// server committed.
// lossyClient is a client of the server at url whose first answer is
// lost on the way back (the call itself went through), retrying without
// waiting, and its transport, which counts the calls.
func lossyClient(url string) (*client.Client, *lossyTransport) {
	lossy := &lossyTransport{}
	lossy.drop.Store(1)
	return client.New(client.Config{
		Server: url, HTTPClient: authed(&http.Client{Transport: lossy}, url), RetryFor: time.Minute,
		SleepFunc: func(context.Context, time.Duration) error { return nil },
	}), lossy
}

type lossyTransport struct {
	drop  atomic.Int32
	calls atomic.Int32
}

func (l *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	l.calls.Add(1)
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && l.drop.Add(-1) >= 0 {
		res.Body.Close()
		return nil, errors.New("connection reset (test)")
	}
	return res, err
}

// TestDiscloseRetryLostAnswer: the first Disclose reaches the server but its
// answer is lost; the client retries with the same idempotency key and the
// server replays its answer, so exactly one set exists.
func TestDiscloseRetryLostAnswer(t *testing.T) {
	t.Parallel()
	url := startServer(t, 0)
	c, lossy := lossyClient(url)
	ctx := context.Background()
	res, err := c.Disclose(ctx, client.DiscloseInput{Name: "retried", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || lossy.calls.Load() != 2 {
		t.Errorf("replayed = %v after %d calls, want a replay on the second call", res.Replayed, lossy.calls.Load())
	}
	list, err := c.ListTaskSets(ctx, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sets) != 1 || list.Sets[0].ID != res.Set.ID || list.Sets[0].Counts.Total != 1 {
		t.Errorf("sets = %+v, want the one set %d with one task", list.Sets, res.Set.ID)
	}
}

// TestErrorsCarryCodes checks that the server's Connect codes come back as
// sched codes.
func TestErrorsCarryCodes(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, 0)
	ctx := context.Background()
	_, err := c.GetTaskSet(ctx, client.GetTaskSetInput{Set: 424242})
	if got, want := sched.ErrorCode(err), sched.ENOTFOUND; got != want {
		t.Errorf("GetTaskSet(unknown) code = %q (%v), want %q", got, err, want)
	}
	_, err = c.Disclose(ctx, client.DiscloseInput{})
	if got, want := sched.ErrorCode(err), sched.EINVALID; got != want {
		t.Errorf("Disclose(no tasks) code = %q (%v), want %q", got, err, want)
	}
	d, err := c.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetOutput(ctx, sched.TaskRef{Set: d.Set.ID, Index: 0})
	if got, want := sched.ErrorCode(err), sched.EFAILEDPRECONDITION; got != want {
		t.Errorf("GetOutput(disclosed) code = %q (%v), want %q", got, err, want)
	}
	if _, err := c.CancelAll(ctx, d.Set.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Request(ctx, d.Set.ID, []int32{0})
	if got, want := sched.ErrorCode(err), sched.EFAILEDPRECONDITION; got != want {
		t.Errorf("Request(canceled) code = %q (%v), want %q", got, err, want)
	}
}

// An empty list of tasks is an error, never the whole set: requesting the
// whole set (and being billed for it) takes RequestAll; the same for
// Cancel and Retry.
func TestEmptyListIsNotAll(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, 0)
	ctx := context.Background()
	d, err := c.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}}, {Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	counts := func() sched.TaskCounts {
		t.Helper()
		set, err := c.GetTaskSet(ctx, client.GetTaskSetInput{Set: d.Set.ID})
		if err != nil {
			t.Fatal(err)
		}
		return set.Set.Counts
	}
	_, err = c.Request(ctx, d.Set.ID, nil)
	if got, want := sched.ErrorCode(err), sched.EINVALID; got != want {
		t.Errorf("Request(nil) code = %q (%v), want %q", got, err, want)
	}
	_, err = c.Cancel(ctx, d.Set.ID, []int32{})
	if got, want := sched.ErrorCode(err), sched.EINVALID; got != want {
		t.Errorf("Cancel(empty) code = %q (%v), want %q", got, err, want)
	}
	_, err = c.Retry(ctx, d.Set.ID, nil)
	if got, want := sched.ErrorCode(err), sched.EINVALID; got != want {
		t.Errorf("Retry(nil) code = %q (%v), want %q", got, err, want)
	}
	if got := counts(); got.Requested != 0 || got.Canceled != 0 || got.Disclosed != 3 {
		t.Fatalf("counts after calls that named nothing: %+v, want 3 disclosed", got)
	}

	r, err := c.RequestAll(ctx, d.Set.ID)
	if err != nil || r.Requested != 3 {
		t.Fatalf("RequestAll: %+v, %v; want 3 requested", r, err)
	}
	cr, err := c.CancelAll(ctx, d.Set.ID)
	if err != nil || cr.Canceled != 3 || cr.Stopped != 0 || cr.Unchanged != 0 {
		t.Fatalf("CancelAll of a requested set: %+v, %v; want 3 canceled (requested, never ran: not stopped)", cr, err)
	}
	if _, err := c.RetryAll(ctx, d.Set.ID); sched.ErrorCode(err) == sched.EINVALID {
		t.Fatalf("RetryAll: %v", err)
	}
}

// TestRunAndRead runs two tasks on a real worker and reads them back as
// domain records: states, output, bill.
func TestRunAndRead(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d, err := c.Disclose(ctx, client.DiscloseInput{Name: "two", Request: true, Tasks: []sched.TaskSpec{
		{Argv: []string{"sh", "-c", "echo out; echo err >&2"}},
		{Argv: []string{"sh", "-c", "exit 4"}, Env: map[string]string{"X": "1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != 2 || d.FirstIndex != 0 || d.Set.Name != "two" {
		t.Fatalf("disclose = %+v", d)
	}
	snapshots := 0
	err = c.Watch(ctx, d.Set.ID, func(u client.WatchUpdate) error {
		if u.Snapshot {
			snapshots++
		}
		if u.Set.Counts.Finished == 2 {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil || snapshots < 1 {
		t.Fatalf("watch: %v (%d snapshots)", err, snapshots)
	}
	page, err := c.GetTaskSet(ctx, client.GetTaskSetInput{Set: d.Set.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != 2 || page.Tasks[1].ExitCode != 4 || page.Tasks[1].Spec.Env["X"] != "1" || page.Tasks[0].State != sched.TaskFinished {
		t.Errorf("tasks = %+v", page.Tasks)
	}
	out, err := c.GetOutput(ctx, sched.TaskRef{Set: d.Set.ID, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Stdout) != "out\n" || string(out.Stderr) != "err\n" || out.ExitCode != 0 || out.State != sched.TaskFinished {
		t.Errorf("output = %+v", out)
	}
	bill, err := c.GetBill(ctx, client.BillInput{Set: d.Set.ID, Lines: true})
	if err != nil {
		t.Fatal(err)
	}
	if bill.Totals.Lines != 2 || len(bill.Lines) != 2 {
		t.Errorf("bill = %+v, want 2 lines", bill)
	}
	cl, err := c.GetCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Slots != 2 || len(cl.Workers) != 1 || cl.Workers[0].ID != "test-worker" {
		t.Errorf("cluster = %+v", cl)
	}
}

// cutTransport forwards requests and keeps the body of each open
// WatchTaskSet stream so that the test can break it mid-way, as a killed
// server or a cut connection does.
type cutTransport struct {
	path    string // the stream procedure cut ("": /WatchTaskSet)
	mu      sync.Mutex
	streams []*cutBody
}

type cutBody struct {
	io.ReadCloser
	cut atomic.Bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, errors.New("connection reset (test)")
	}
	return n, err
}

func (c *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	path := c.path
	if path == "" {
		path = "/WatchTaskSet"
	}
	if err != nil || !strings.HasSuffix(r.URL.Path, path) {
		return res, err
	}
	b := &cutBody{ReadCloser: res.Body}
	res.Body = b
	c.mu.Lock()
	c.streams = append(c.streams, b)
	c.mu.Unlock()
	return res, nil
}

// cutAll breaks every open stream and returns how many were opened so far.
func (c *cutTransport) cutAll() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.streams {
		b.cut.Store(true)
		b.ReadCloser.Close()
	}
	return len(c.streams)
}

// TestWatchSilentStream: a stream that stays silent past WatchIdle is taken
// for a dead connection and opened again (a fresh snapshot follows); with
// the server's keepalives arriving more often than that, it is not.
func TestWatchSilentStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		keepalive      time.Duration
		idle           time.Duration
		wantReconnects bool
	}{
		{"silent server", -1, 100 * time.Millisecond, true},
		{"keepalives", 20 * time.Millisecond, time.Minute, false}, // no gap of a minute between keepalives, however loaded the machine
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := startServerWith(t, 0, server.Config{WatchKeepalive: tc.keepalive})
			var reconnects atomic.Int32
			var why atomic.Value
			c := client.New(client.Config{Server: url, HTTPClient: authed(nil, url), RetryFor: time.Minute, WatchIdle: tc.idle,
				SleepFunc: func(context.Context, time.Duration) error { return nil },
				ReconnectFunc: func(err error, _ time.Duration) {
					reconnects.Add(1)
					why.Store(sched.ErrorMessage(err))
				}})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			d, err := c.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
			if err != nil {
				t.Fatal(err)
			}
			snapshots, quiet := 0, 0
			err = c.Watch(ctx, d.Set.ID, func(u client.WatchUpdate) error {
				switch {
				case u.Snapshot:
					snapshots++
				case len(u.Tasks) == 0:
					quiet++
				}
				if snapshots >= 3 || quiet >= 20 {
					return client.ErrStopWatch
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantReconnects {
				if snapshots < 3 || reconnects.Load() < 2 {
					t.Fatalf("%d snapshots, %d reconnects; want a new watch after each silence", snapshots, reconnects.Load())
				}
				if msg, _ := why.Load().(string); !strings.Contains(msg, "silent") {
					t.Errorf("reconnect reason %q, want it to say the stream was silent", msg)
				}
			} else if snapshots != 1 || reconnects.Load() != 0 || quiet < 20 {
				t.Fatalf("%d snapshots, %d keepalives, %d reconnects; want one watch kept alive", snapshots, quiet, reconnects.Load())
			}
		})
	}
}

// TestWatchRidesOutDrop breaks a watch stream mid-way: Watch opens a new
// one by itself, starts again from a snapshot, and goes on delivering
// changes.
func TestWatchRidesOutDrop(t *testing.T) {
	t.Parallel()
	url := startServer(t, 0)
	cut := &cutTransport{}
	var reconnects atomic.Int32
	c := client.New(client.Config{Server: url, HTTPClient: authed(&http.Client{Transport: cut}, url),
		RetryFor: time.Minute, SleepFunc: func(context.Context, time.Duration) error { return nil },
		ReconnectFunc: func(error, time.Duration) { reconnects.Add(1) }})
	plain := client.New(client.Config{Server: url, HTTPClient: authed(nil, url)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d, err := plain.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	updates := make(chan client.WatchUpdate)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, d.Set.ID, func(u client.WatchUpdate) error {
			select {
			case updates <- u:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	next := func(what string) client.WatchUpdate {
		t.Helper()
		select {
		case u := <-updates:
			return u
		case err := <-done:
			t.Fatalf("watch ended waiting for %s: %v", what, err)
		case <-ctx.Done():
			t.Fatalf("no %s", what)
		}
		return client.WatchUpdate{}
	}
	if u := next("first snapshot"); !u.Snapshot || len(u.Tasks) != 2 {
		t.Fatalf("first message = %+v, want a snapshot of 2 tasks", u)
	}
	if n := cut.cutAll(); n != 1 {
		t.Fatalf("%d streams opened before the cut, want 1", n)
	}
	if u := next("snapshot after the drop"); !u.Snapshot || len(u.Tasks) != 2 {
		t.Fatalf("after the drop = %+v, want a new snapshot", u)
	}
	if n := reconnects.Load(); n != 1 {
		t.Errorf("ReconnectFunc told of %d reconnects, want 1", n)
	}
	if _, err := plain.Request(ctx, d.Set.ID, []int32{1}); err != nil {
		t.Fatal(err)
	}
	u := next("the change after the drop")
	if u.Snapshot || len(u.Tasks) != 1 || u.Tasks[0].Index != 1 || u.Tasks[0].State != sched.TaskRequested {
		t.Fatalf("change after the drop = %+v, want task 1 requested", u)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v, want context.Canceled", err)
	}
}

// TestDiscloseBigSetStreams: a set bigger than the server's unary Disclose
// limit goes through DiscloseStream; a retry after a lost answer replays
// the first stream's answer (one set), and appending works on this path
// as on the unary one.
func TestDiscloseBigSetStreams(t *testing.T) {
	t.Parallel()
	url := startServer(t, 0)
	c, lossy := lossyClient(url)
	big := strings.Repeat("x", 100<<10)
	tasks := make([]sched.TaskSpec, (server.DiscloseRequestBytes+4<<20)/len(big))
	for i := range tasks {
		tasks[i] = sched.TaskSpec{Argv: []string{"echo", big}}
	}
	ctx := context.Background()
	res, err := c.Disclose(ctx, client.DiscloseInput{Name: "big", Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || lossy.calls.Load() != 2 || res.Count != int32(len(tasks)) {
		t.Errorf("replayed = %v, count %d after %d calls, want a replay of %d tasks on the second call",
			res.Replayed, res.Count, lossy.calls.Load(), len(tasks))
	}
	more, err := c.Disclose(ctx, client.DiscloseInput{Set: res.Set.ID, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	if more.Set.ID != res.Set.ID || more.FirstIndex != int32(len(tasks)) || more.Set.Counts.Total != int64(2*len(tasks)) {
		t.Errorf("append: set %d first index %d total %d, want set %d from %d, %d in all",
			more.Set.ID, more.FirstIndex, more.Set.Counts.Total, res.Set.ID, len(tasks), 2*len(tasks))
	}
	list, err := c.ListTaskSets(ctx, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sets) != 1 {
		t.Errorf("sets = %+v, want the one set %d", list.Sets, res.Set.ID)
	}
}
