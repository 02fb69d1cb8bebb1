package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/store"
)

// fakeClock is a clock tests move by hand; safe for the gate's timers.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (g *apiGate) waitingCalls() (n int) { g.mu.Lock(); n = len(g.waiters); g.mu.Unlock(); return n }
func (g *apiGate) workerCalls() (n int)  { g.mu.Lock(); n = g.workers; g.mu.Unlock(); return n }
func (g *apiGate) runningCalls() (n int) { g.mu.Lock(); n = g.running; g.mu.Unlock(); return n }
func (g *apiGate) record() func() []string { // the events the gate sees, in order
	var mu sync.Mutex
	var ev []string
	g.mu.Lock()
	g.seen = func(e string) { mu.Lock(); ev = append(ev, e); mu.Unlock() }
	g.mu.Unlock()
	return func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(ev) }
}

// until polls cond, a hang guard only: nothing here depends on how long
// anything takes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
	}
}

// While the worker lane is busy and the API has used its share of the
// time, API calls wait in order and worker calls do not wait at all; once
// the worker lane is quiet, the waiting API calls are admitted in arrival
// order. The clock is the test's: the API's last turn was held for an hour
// of it, so the share allows no API call for another hour.
func TestAPIGateWorkerCallsFirst(t *testing.T) {
	clk := newFakeClock()
	g := newAPIGate(1, clk.now)
	events := g.record()
	ctx := context.Background()

	relA, err := g.apiCall(ctx) // the worker lane is idle: at once
	if err != nil {
		t.Fatal(err)
	}
	endW1 := g.workerCall()
	var order []string
	var orderMu sync.Mutex
	var wg sync.WaitGroup
	for i, name := range []string{"b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := g.apiCall(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			orderMu.Lock()
			order = append(order, name)
			orderMu.Unlock()
			rel()
		}()
		until(t, name+" waits", func() bool { return g.waitingCalls() == i+1 })
	}
	clk.add(time.Hour)
	relA() // a turn is free, but a worker call is in progress and the share is spent
	endW2 := g.workerCall()
	endW3 := g.workerCall() // worker calls go in beside the waiting API calls
	if g.workerCalls() != 3 || g.runningCalls() != 0 || g.waitingCalls() != 3 {
		t.Fatalf("%d worker calls, %d API calls admitted, %d waiting; want 3, 0, 3", g.workerCalls(), g.runningCalls(), g.waitingCalls())
	}
	endW1()
	endW2()
	endW3()
	if g.runningCalls() != 0 || g.waitingCalls() != 3 {
		t.Fatal("API calls were admitted within the worker lane's busy window")
	}
	clk.add(time.Second) // the worker lane is quiet now; the timer's grant sees it
	wg.Wait()
	if !slices.Equal(order, []string{"b", "c", "d"}) {
		t.Errorf("API calls admitted in the order %v, want b, c, d", order)
	}
	want := []string{"api-admit", "worker-start", "api-wait", "api-wait", "api-wait", "worker-start", "worker-start",
		"worker-end", "worker-end", "worker-end", "api-admit", "api-admit", "api-admit"}
	if got := events(); !slices.Equal(got, want) {
		t.Errorf("events %v\nwant %v", got, want)
	}
	if a, w, b := g.stats(); a != 4 || w != 3 || b != 0 {
		t.Errorf("admitted %d, waited %d, admitted while busy %d; want 4, 3, 0", a, w, b)
	}
}

// Under a worker lane that never goes quiet the API still gets turns, one
// after each gap of its share: a turn held for d (here 10 ms of the test's
// clock) lets the next one in d·(1−share)/share later, not before.
func TestAPIGateShareWhileBusy(t *testing.T) {
	clk := newFakeClock()
	g := newAPIGate(1, clk.now)
	ctx := context.Background()
	defer g.workerCall()() // busy throughout

	admitted := make(chan func(), 3)
	for range 3 {
		go func() {
			rel, err := g.apiCall(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			admitted <- rel
		}()
	}
	// The share allows the first at once (no turn was held yet), each
	// other once the clock moved past its gap.
	until(t, "one API call is admitted and two wait", func() bool { return g.runningCalls() == 1 && g.waitingCalls() == 2 })
	for i := range 3 {
		var rel func()
		select {
		case rel = <-admitted:
		case <-time.After(time.Minute): // a hang guard only
			t.Fatalf("call %d was not admitted after its gap", i)
		}
		if n := g.runningCalls(); n != 1 {
			t.Fatalf("call %d: %d API calls hold a turn, want 1", i, n)
		}
		const held = 10 * time.Millisecond
		clk.add(held)
		rel()
		if i < 2 {
			if g.runningCalls() != 0 || g.waitingCalls() != 2-i || len(admitted) != 0 {
				t.Fatalf("call %d: the next call was admitted before its gap", i)
			}
			clk.add(time.Duration(float64(held) * (1 - g.share) / g.share)) // the gap
		}
	}
	if _, _, b := g.stats(); b != 3 {
		t.Errorf("%d calls admitted while busy, want 3", b)
	}
}

// A waiting API call whose context ends leaves the line, and the calls
// behind it keep their places.
func TestAPIGateCanceledWaiter(t *testing.T) {
	clk := newFakeClock()
	g := newAPIGate(1, clk.now)
	rel, err := g.apiCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := g.apiCall(ctx); errc <- err }()
	until(t, "the call waits", func() bool { return g.waitingCalls() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a canceled waiter got a turn")
	}
	if g.waitingCalls() != 0 {
		t.Fatal("the canceled waiter is still in line")
	}
	rel()
	if rel2, err := g.apiCall(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		rel2()
	}
}

// Over HTTP, with the API's turn held (injected API load, the test's own
// call) and a worker call in progress: API calls wait in the gate before
// their bodies are read, while a worker's heartbeat is answered beside
// them; the API calls are admitted only after the worker lane is quiet.
func TestAPIGateServesWorkersFirstOverHTTP(t *testing.T) {
	clk := newFakeClock()
	s, sets, work := gateTestServer(t)
	s.gate.now = clk.now
	events := s.gate.record()
	ctx := context.Background()
	if _, err := work.Register(ctx, &batchv1.RegisterRequest{Name: "w", Slots: 1, Isolation: "namespaces"}); err != nil {
		t.Fatal(err)
	}

	held, err := s.gate.apiCall(ctx) // the API load holds the one turn
	if err != nil {
		t.Fatal(err)
	}
	endW := s.gate.workerCall() // and the worker lane is busy
	const n = 4
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := sets.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{PageSize: 50})
			done <- err
		}()
	}
	until(t, "the API calls wait", func() bool { return s.gate.waitingCalls() == n })
	for range 3 {
		if _, err := work.Heartbeat(ctx, &batchv1.HeartbeatRequest{WorkerId: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	if s.gate.waitingCalls() != n {
		t.Fatal("API calls went in beside the worker calls")
	}
	clk.add(time.Hour)
	held() // the API's turn is free, the worker lane still busy
	if s.gate.runningCalls() != 0 || s.gate.waitingCalls() != n {
		t.Fatal("an API call was admitted while the worker lane was busy and the share spent")
	}
	endW()
	clk.add(time.Second)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Every worker call's start and end came before the first API call
	// admitted after the test's own.
	ev := events()
	firstAdmit := slices.Index(ev, "api-admit")
	if got := count(ev, "worker-start"); got != 5 { // the registration, the test's and three heartbeats
		t.Errorf("%d worker calls seen, want 5 (%v)", got, ev)
	}
	if last, first := lastIndex(ev, "worker-end"), slices.Index(ev[firstAdmit+1:], "api-admit")+firstAdmit+1; first <= last {
		t.Errorf("an API call was admitted (event %d) before the last worker call ended (event %d): %v", first, last, ev)
	}
}

// gateTestServer is a server with one API turn over HTTP (closed when the
// test ends), with clients for a user "u" and a worker "wk".
func gateTestServer(t *testing.T) (*Server, batchv1connect.TaskSetServiceClient, batchv1connect.WorkerServiceClient) {
	t.Helper()
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1, APIConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()
	_, utok, err := s.db.AddUser(ctx, store.AddUserInput{Name: "u", Role: store.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	_, wtok, err := s.db.AddUser(ctx, store.AddUserInput{Name: "wk", Role: store.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	return s, batchv1connect.NewTaskSetServiceClient(client.WithToken(&http.Client{}, utok), hs.URL),
		batchv1connect.NewWorkerServiceClient(client.WithToken(&http.Client{}, wtok), hs.URL)
}

func count(ev []string, e string) (n int) {
	for _, x := range ev {
		if x == e {
			n++
		}
	}
	return n
}

func lastIndex(ev []string, e string) int {
	for i := len(ev) - 1; i >= 0; i-- {
		if ev[i] == e {
			return i
		}
	}
	return -1
}
