package server

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The API lane's admission. Worker calls (registrations, heartbeats,
// reports, from remote workers and the embedded slots) are the dispatch
// path: a copy starts only after the previous one's report is through.
// API calls (lists, reads, writes) are what users and their scripts ask
// for, and a few hundred closed-loop clients ask for as much as the
// server will answer. Both share the server's processors, and Go's
// scheduler has no priorities: left alone, API handlers took most of the
// CPU and the copies of all users ended at a fifth of their rate.
//
// So each unary API call takes a turn of apiGate before its body is read
// (the HTTP middleware, authenticate), and holds it while it is decoded,
// handled and answered:
//
//   - At most Config.APIConcurrency API calls hold a turn at once; the
//     others wait in arrival order, parked, costing no CPU.
//   - While the worker lane is busy (a worker call is in progress, or one
//     ended less than apiBusyWindow ago: copies are starting and ending),
//     a turn that comes free goes to no API call at once: worker work is
//     served first. To keep the API from starving under a worker lane
//     that is never idle (thousands of remote slots report all the
//     time), an API call is still admitted then, but only so that the
//     API's turns stay busy at most apiShareWhileBusy of the time: after a
//     turn held for d, an admission while workers are busy waits until
//     d·(1−share)/share has passed since it was given back.
//   - Worker calls never wait for the gate; they only count themselves.
//
// Streams (watches, followers, the assignment streams, DiscloseStream) take
// no turn: they last, and would hold it. Writes (apiWriteProcedures) give
// their turn back once decoded, before they queue for the API lane's
// batch under the server's lock.
type apiGate struct {
	limit int     // API calls holding a turn at most (Config.APIConcurrency)
	share float64 // apiShareWhileBusy
	now   func() time.Time

	mu      sync.Mutex
	running int // API calls holding a turn
	workers int // worker calls in progress
	// lastWorkerEnd is when the last worker call ended.
	lastWorkerEnd time.Time
	waiters       []*gateWaiter // API calls waiting, in arrival order
	// nextBusyAdmit is the earliest an API call may be admitted while a
	// worker call is in progress (the API's share); busyHeld counts the
	// turns so admitted and not yet given back (one at a time).
	nextBusyAdmit time.Time
	busyHeld      int
	timer         *time.Timer // armed to run grant at timerAt
	timerAt       time.Time
	// seen, when set (tests), hears each event with mu held: "api-admit",
	// "api-wait", "worker-start", "worker-end".
	seen func(event string)

	admitted, waited, busyAdmitted atomic.Int64
}

// apiShareWhileBusy is the share of the time the API's turns may be busy
// while the worker lane is busy: a quarter. The API then still answers at
// a quarter of its idle rate under any dispatch load, and dispatch gets
// the rest of the time however many API clients call. At a half, the
// copies of all users ended at 0.19 of their unloaded rate under 200
// saturating clients on 2 local slots, at a quarter 0.44 (one run each,
// load 50-67).
const apiShareWhileBusy = 0.25

// apiBusyWindow is how long after a worker call the worker lane counts as
// busy: copies of short tasks end every few milliseconds, and the next
// report is on its way between two calls.
const apiBusyWindow = 20 * time.Millisecond

// gateWaiter is an API call waiting for a turn; ready is closed when it
// has one.
type gateWaiter struct {
	ready   chan struct{}
	granted bool
	busy    bool // admitted while worker calls were in progress
}

func newAPIGate(limit int, now func() time.Time) *apiGate {
	return &apiGate{limit: max(limit, 1), share: apiShareWhileBusy, now: now}
}

// workerCall counts a worker call in progress until the function it
// returns is called (once).
func (g *apiGate) workerCall() func() {
	g.mu.Lock()
	g.workers++
	if g.seen != nil {
		g.seen("worker-start")
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.workers--
			g.lastWorkerEnd = g.now()
			if g.seen != nil {
				g.seen("worker-end")
			}
			g.grant()
			g.mu.Unlock()
		})
	}
}

// apiCall takes a turn for an API call, waiting for it as long as ctx
// allows. It returns the function that gives the turn back (once; safe to
// call again).
func (g *apiGate) apiCall(ctx context.Context) (release func(), err error) {
	g.mu.Lock()
	if len(g.waiters) == 0 && g.running < g.limit && !g.busy(g.now()) {
		busy := g.admit()
		g.mu.Unlock()
		return g.releaser(busy), nil
	}
	w := &gateWaiter{ready: make(chan struct{})}
	g.waiters = append(g.waiters, w)
	g.waited.Add(1)
	if g.seen != nil {
		g.seen("api-wait")
	}
	g.grant()
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.releaser(w.busy), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted { // admitted meanwhile: give the turn back
		g.mu.Unlock()
		g.releaser(w.busy)()
		return nil, connectCtxErr(ctx.Err())
	}
	for i, x := range g.waiters {
		if x == w {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	return nil, connectCtxErr(ctx.Err())
}

// admit gives a turn to an API call and says whether a worker call was in
// progress. Requires mu.
func (g *apiGate) admit() (busy bool) {
	g.running++
	g.admitted.Add(1)
	if g.seen != nil {
		g.seen("api-admit")
	}
	if g.busy(g.now()) {
		g.busyAdmitted.Add(1)
		g.busyHeld++
		return true
	}
	return false
}

// releaser returns the function that gives a turn back, which moves
// nextBusyAdmit by the API's share of the time the turn was held; busy
// says whether it was admitted while the worker lane was busy.
func (g *apiGate) releaser(busy bool) func() {
	start := g.now()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.running--
			if busy {
				g.busyHeld--
			}
			now := g.now()
			if next := now.Add(time.Duration(float64(now.Sub(start)) * (1 - g.share) / g.share)); next.After(g.nextBusyAdmit) {
				g.nextBusyAdmit = next
			}
			g.grant()
			g.mu.Unlock()
		})
	}
}

// grant admits waiters in arrival order while turns are free: all of them
// while no worker call is in progress, otherwise one when the API's share
// allows it (arming a timer for then). Requires mu.
func (g *apiGate) grant() {
	for len(g.waiters) > 0 && g.running < g.limit {
		if now := g.now(); g.busy(now) {
			if g.busyHeld > 0 {
				return // its release sets nextBusyAdmit and grants again
			}
			if now.Before(g.nextBusyAdmit) {
				at := g.nextBusyAdmit
				if g.workers == 0 {
					at = minTime(at, g.lastWorkerEnd.Add(apiBusyWindow))
				}
				g.armTimer(at.Sub(now))
				return
			}
		}
		w := g.waiters[0]
		g.waiters[0] = nil
		g.waiters = g.waiters[1:]
		w.busy = g.admit()
		w.granted = true
		close(w.ready)
	}
}

// busy says whether the worker lane is busy at now. Requires mu.
func (g *apiGate) busy(now time.Time) bool {
	return g.workers > 0 || now.Before(g.lastWorkerEnd.Add(apiBusyWindow))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// armTimer makes grant run again after d, unless a timer is armed to run
// it sooner. Requires mu.
func (g *apiGate) armTimer(d time.Duration) {
	at := g.now().Add(d)
	if g.timer != nil {
		if !at.Before(g.timerAt) {
			return
		}
		g.timer.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		g.mu.Lock()
		if g.timer == t {
			g.timer = nil
		}
		g.grant()
		g.mu.Unlock()
	})
	g.timer, g.timerAt = t, at
}

// stats returns the API calls admitted, those that waited, and those
// admitted while a worker call was in progress.
func (g *apiGate) stats() (admitted, waited, busy int64) {
	return g.admitted.Load(), g.waited.Load(), g.busyAdmitted.Load()
}

// collectors are the gate's metrics.
func (g *apiGate) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_api_admitted_total",
			Help: "Unary API calls admitted to a turn (batchd serve --api-concurrency)."},
			func() float64 { a, _, _ := g.stats(); return float64(a) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_api_waited_total",
			Help: "Unary API calls that waited for a turn: all turns were taken, or worker calls were in progress."},
			func() float64 { _, w, _ := g.stats(); return float64(w) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_api_admitted_busy_total",
			Help: "Unary API calls admitted while worker calls were in progress, within the API's share of the time."},
			func() float64 { _, _, b := g.stats(); return float64(b) }),
	}
}

// streamProcedures are the procedures that stream (client, server or
// both), from the service descriptors: they take no turn of the gate.
var streamProcedures = procedures(func(m protoreflect.MethodDescriptor) bool {
	return m.IsStreamingClient() || m.IsStreamingServer()
})

// watchProcedures are the procedures whose only stream is the server's
// (watches, followers): once open, they mostly wait.
var watchProcedures = procedures(func(m protoreflect.MethodDescriptor) bool {
	return m.IsStreamingServer() && !m.IsStreamingClient()
})

// procedures is the set of batchd's procedures ("/package.Service/Method")
// whose methods keep says yes to.
func procedures(keep func(protoreflect.MethodDescriptor) bool) map[string]bool {
	out := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(f.Package()), "batch.") {
			return true
		}
		for i := 0; i < f.Services().Len(); i++ {
			svc := f.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				if m := svc.Methods().Get(j); keep(m) {
					out["/"+string(svc.FullName())+"/"+string(m.Name())] = true
				}
			}
		}
		return true
	})
	return out
}

// gateTurnKey is the context key of an API call's turn (the function that
// gives it back), taken in authenticate.
type gateTurnKey struct{}
