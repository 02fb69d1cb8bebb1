package server

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ProcsPolicy lets the server's Go processors (GOMAXPROCS) follow what it
// serves: High while API calls come, Low while only workers call.
//
// On 2 CPUs, one processor per CPU took a fifth less of the server's CPU
// per task on the dispatch path than two per CPU: no idle processor woke
// threads for each goroutine made runnable (9.6 thread switches a task
// against 6). But with one per CPU, API work took its goroutines' turns
// from the worker lane's: a heartbeat waited up to 0.3 s behind eight
// big discloses, and under 200 saturating clients all users' copies ran
// at 0.73 of their rate alone instead of 0.78 (docs/benchmarks.md,
// "Settings compared: --procs"). So the server takes High as an API call
// begins and goes back to Low once none has run for Hold.
type ProcsPolicy struct {
	Low, High int
	// Hold is how long after the last API call ended the server keeps
	// High (default 2 s).
	Hold time.Duration
}

// on says whether the policy changes anything.
func (p ProcsPolicy) on() bool { return p.Low > 0 && p.High > p.Low }

// procsControl applies a ProcsPolicy. API calls that last (unary calls,
// uploads) count from their start to their end; a watch counts only
// when it opens, since an open watch mostly waits.
type procsControl struct {
	pol ProcsPolicy
	set func(int) int // runtime.GOMAXPROCS
	now func() time.Time

	inflight atomic.Int64 // API calls in progress
	last     atomic.Int64 // when an API call last began or ended (UnixNano)
	cur      atomic.Int64 // the processors set
	changes  atomic.Int64
	wake     chan struct{}
}

func newProcsControl(pol ProcsPolicy, set func(int) int, now func() time.Time) *procsControl {
	if pol.Hold <= 0 {
		pol.Hold = 2 * time.Second
	}
	p := &procsControl{pol: pol, set: set, now: now, wake: make(chan struct{}, 1)}
	p.cur.Store(int64(pol.High))
	set(pol.High) // start-up (migrations, loading the state) runs at High
	p.last.Store(now().UnixNano())
	return p
}

// begin counts an API call in progress until the function it returns is
// called.
func (p *procsControl) begin() (end func()) {
	p.inflight.Add(1)
	p.last.Store(p.now().UnixNano())
	if p.cur.Load() != int64(p.pol.High) {
		p.poke()
	}
	return func() {
		p.last.Store(p.now().UnixNano())
		if p.inflight.Add(-1) == 0 {
			p.poke() // run arms the hold
		}
	}
}

// touch notes an API call that does not count while it lasts (a watch).
func (p *procsControl) touch() { p.begin()() }

func (p *procsControl) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// want is the processors for now, and when to look again (0: when poked).
func (p *procsControl) want(now time.Time) (n int, again time.Duration) {
	if p.inflight.Load() > 0 {
		return p.pol.High, 0
	}
	if since := now.Sub(time.Unix(0, p.last.Load())); since < p.pol.Hold {
		return p.pol.High, p.pol.Hold - since
	}
	return p.pol.Low, 0
}

// run sets the processors as want says until stop is closed.
func (p *procsControl) run(stop <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		n, again := p.want(p.now())
		if int64(n) != p.cur.Load() {
			p.set(n)
			p.cur.Store(int64(n))
			p.changes.Add(1)
			// A call that began after want looked, and saw the old
			// value in cur, did not poke: look again.
			continue
		}
		t.Stop()
		var tc <-chan time.Time
		if again > 0 {
			t.Reset(again)
			tc = t.C
		}
		select {
		case <-stop:
			return
		case <-p.wake:
		case <-tc:
		}
	}
}

// procsCollectors export the processors, and the changes p made (none
// when p is nil: a fixed --procs).
func procsCollectors(p *procsControl) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_go_procs",
			Help: "The server's Go processors (GOMAXPROCS) now: --procs, or by default more while API calls come than while only workers call."},
			func() float64 { return float64(runtime.GOMAXPROCS(0)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_go_procs_changes_total",
			Help: "Times the server changed its Go processors between API traffic and worker traffic alone (the default --procs)."},
			func() float64 {
				if p == nil {
					return 0
				}
				return float64(p.changes.Load())
			}),
	}
}
