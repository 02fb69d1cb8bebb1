package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/internal/promtext"
	"batchd/worker"
)

// watches reads the server's batchd_watches_total by kind.
func (e *env) watches() map[string]int {
	e.t.Helper()
	m, err := promtext.Read(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for series, v := range m {
		if rest, ok := strings.CutPrefix(series, `batchd_watches_total{tasks="`); ok {
			out[strings.TrimSuffix(rest, `"}`)] = int(v)
		}
	}
	return out
}

// TestRequestWaitWatchesWhatItReads: request of a whole set waits on a
// summary-only watch (the set's counts), request of named tasks on a
// watch of those tasks; each prints what it prints for the same tasks
// when they are done before it asks.
func TestRequestWaitWatchesWhatItReads(t *testing.T) {
	line := "true"
	for _, c := range []struct{ kind, sel string }{{"summary", ""}, {"named", "/0,2"}} {
		// No worker yet: the request cannot find the tasks done (nor
		// executed while disclosed), so it watches.
		e := newEnv(t, 0)
		sel := strings.TrimSpace(e.ok("disclose", "-q", "--file", writeTemp(t, line+"\n"+line+"\n"+line+"\n"))) + c.sel
		type result struct {
			out, errOut string
			code        int
		}
		done := make(chan result, 1)
		go func() {
			out, errOut, code := e.run("request", "-q", sel)
			done <- result{out, errOut, code}
		}()
		w := e.watches()
		for ; w["every"]+w["named"]+w["summary"] == 0; w = e.watches() {
		}
		for _, k := range []string{"every", "named", "summary"} {
			if want := map[bool]int{true: 1}[k == c.kind]; w[k] != want {
				t.Errorf("request %s: watches %q = %d, want %d (%v)", sel, k, w[k], want, w)
			}
		}
		startWorker(t, e, 2)
		got := <-done
		again, againErr, againCode := e.run("request", "-q", sel) // done: no watch
		if got.code != 0 || got.out != again || got.errOut != againErr || againCode != 0 {
			t.Errorf("request %s: %q, %q, exit %d; once done: %q, %q, exit %d", sel, got.out, got.errOut, got.code, again, againErr, againCode)
		}
		if !strings.Contains(got.out, "| 1/2 ") || strings.Contains(got.out, "| 1/1 ") != (c.sel == "") {
			t.Errorf("request %s printed %q", sel, got.out)
		}
	}
}

// startWorker starts a worker agent of slots slots for e's server.
func startWorker(t *testing.T, e *env, slots int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.Run(ctx, worker.Config{
			Server: e.srv.URL(), Name: "w", Slots: slots, StateDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DrainTimeout: time.Second,
			ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(e.srv.LocalWorkerToken()))},
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}
