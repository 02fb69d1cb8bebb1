package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"batchd/store"
)

// DefaultMaxRequestMemory is the server-wide budget, in bytes, for the
// request bodies in flight (Config.MaxRequestMemory).
const DefaultMaxRequestMemory = 512 << 20

// unaryMemFactor is what a unary call's body costs in memory per byte on
// the wire while it is read and decoded: the read buffer grows by
// doubling (the old and the new buffer live together while it grows),
// then the decoded message holds the body's strings again. Admission
// charges each body this many times its size, so that the budget bounds
// memory, not wire bytes: 40 chunked 25 MB Disclose bodies at once grew
// RSS by 1.4-1.7 times what a factor of 2 charged.
const unaryMemFactor = 3

// streamMemFactor is the same for a stream's messages, each read into a
// buffer of its declared size: a 100 MB DiscloseStream grows RSS by 1.7
// times its wire bytes (bench/authmem).
const streamMemFactor = 2

// admissionWait is how long a request waits for its share of the budget
// before it is refused with ResourceExhausted (sooner when its own
// deadline comes first).
const admissionWait = 5 * time.Second

// admission is the budget of memory for request bodies in flight: each
// request takes its share before its body is read (the declared length or,
// for a body without one, the procedure's read limit) and gives it back
// when its handler returns. A user holds at most perUser of it. Requests
// that do not fit wait their turn, in order, for at most admissionWait;
// then they are refused with a hint to retry. Worker calls take their
// share without waiting: the worker lane never stalls behind users'
// bodies, and workers' reports are bounded by their own read limit.
type admission struct {
	budget, perUser int64
	wait            time.Duration // admissionWait

	mu      sync.Mutex
	inUse   int64
	users   map[string]int64
	waiters []*admitWaiter // in arrival order

	peak, refused, waited atomic.Int64
}

// admitWaiter is one request waiting for n bytes of the budget; ready is
// closed when it got them.
type admitWaiter struct {
	user  string
	n     int64
	ready chan struct{}
}

func newAdmission(budget int64) *admission {
	return &admission{budget: budget, perUser: max(budget/2, 1), wait: admissionWait, users: map[string]int64{}}
}

// fits says whether n more bytes for user fit the budget and the user's
// cap; a user holding nothing may always take its one request's share.
// Requires mu.
func (a *admission) fits(user string, n int64) (global, own bool) {
	held := a.users[user]
	return a.inUse+n <= a.budget, held == 0 || held+n <= a.perUser
}

// take charges n bytes to user. Requires mu.
func (a *admission) take(user string, n int64) {
	a.inUse += n
	a.users[user] += n
	if a.inUse > a.peak.Load() {
		a.peak.Store(a.inUse)
	}
}

// acquire takes n bytes of the budget for user, waiting for them as long
// as admissionWait and ctx allow; worker calls never wait. It returns the
// function that gives them back.
func (a *admission) acquire(ctx context.Context, user string, n int64, worker bool) (release func(), err error) {
	if n > a.budget && !worker {
		a.refused.Add(1)
		return nil, connect.NewError(connect.CodeResourceExhausted,
			fmt.Errorf("the request may hold %d bytes in memory, more than the server's request memory budget of %d (batchd serve --max-request-memory): send it in smaller calls", n, a.budget))
	}
	n = min(n, a.budget)
	a.mu.Lock()
	global, own := a.fits(user, n)
	if worker || (global && own && len(a.waiters) == 0) {
		a.take(user, n)
		a.mu.Unlock()
		return a.releaser(user, n), nil
	}
	// In line behind those waiting, unless all that holds them back is
	// their own users' caps.
	w := &admitWaiter{user: user, n: n, ready: make(chan struct{})}
	a.waiters = append(a.waiters, w)
	a.grant()
	a.mu.Unlock()
	select {
	case <-w.ready:
		return a.releaser(user, n), nil
	default:
	}
	a.waited.Add(1)
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return a.releaser(user, n), nil
	case <-t.C:
	case <-ctx.Done():
	}
	a.mu.Lock()
	select {
	case <-w.ready: // granted meanwhile
		a.mu.Unlock()
		return a.releaser(user, n), nil
	default:
	}
	for i, x := range a.waiters {
		if x == w {
			a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
			break
		}
	}
	a.grant() // those behind it may fit now
	inUse, mine := a.inUse, a.users[user]
	a.mu.Unlock()
	a.refused.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, connectCtxErr(err)
	}
	return nil, connect.NewError(connect.CodeResourceExhausted,
		fmt.Errorf("request bodies in flight hold %d of the server's %d bytes (yours %d of %d per user): retry in a second or two, or send smaller calls", inUse, a.budget, mine, a.perUser))
}

// connectCtxErr is ctx's end as a Connect error.
func connectCtxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return connect.NewError(connect.CodeCanceled, err)
}

// releaser returns the function that gives n bytes of user's back, once.
func (a *admission) releaser(user string, n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.inUse -= n
			if a.users[user] -= n; a.users[user] <= 0 {
				delete(a.users, user)
			}
			a.grant()
			a.mu.Unlock()
		})
	}
}

// grant admits waiters in arrival order while the budget allows. A waiter
// that only its own user's cap holds back is passed over (one user's
// queue never blocks another's); one that the budget holds back stops the
// walk, so that a big body is not starved by small ones behind it.
// Requires mu.
func (a *admission) grant() {
	kept := a.waiters[:0]
	blocked := false
	for _, w := range a.waiters {
		if !blocked {
			global, own := a.fits(w.user, w.n)
			if global && own {
				a.take(w.user, w.n)
				close(w.ready)
				continue
			}
			blocked = !global
		}
		kept = append(kept, w)
	}
	clear(a.waiters[len(kept):])
	a.waiters = kept
}

// stats returns the bytes held now, the most ever held, and how many
// requests waited and were refused.
func (a *admission) stats() (inUse, peak, waited, refused int64) {
	a.mu.Lock()
	inUse = a.inUse
	a.mu.Unlock()
	return inUse, a.peak.Load(), a.waited.Load(), a.refused.Load()
}

// growingBody is a streaming request's body without a declared length: it
// holds budget for what it has read so far and takes more, one message's
// limit at a time, before it reads past what it holds.
type growingBody struct {
	io.ReadCloser
	ctx     context.Context
	a       *admission
	user    string
	step    int64 // wire bytes taken at a time
	read    int64 // wire bytes read so far
	held    int64 // wire bytes the budget holds for this body
	worker  bool
	release []func()
}

func (b *growingBody) Read(p []byte) (int, error) {
	if b.read >= b.held {
		rel, err := b.a.acquire(b.ctx, b.user, b.step*streamMemFactor, b.worker)
		if err != nil {
			return 0, err
		}
		b.release = append(b.release, rel)
		b.held += b.step
	}
	if room := b.held - b.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

// giveBack returns everything the body took.
func (b *growingBody) giveBack() {
	for _, r := range b.release {
		r()
	}
}

// admit takes the budget a request's body needs before any of it is
// read: a unary call's declared length, or its procedure's read limit
// when it declares none; a stream's body (several messages) takes it one
// message's limit at a time as it is read. It returns the body to read
// and the function that gives the budget back once the handler is done.
func (s *Server) admit(ctx context.Context, body io.ReadCloser, declared int64, lim readLimit) (func(), io.ReadCloser, error) {
	c := CallerFrom(ctx)
	worker := c.Role == store.RoleWorker
	if lim.body > lim.msg+envelopeSlack { // a stream of messages
		b := &growingBody{ReadCloser: body, ctx: ctx, a: s.bodies, user: c.Name, step: lim.msg + envelopeSlack, worker: worker}
		if b.step >= tightBodyBytes {
			b.release = append(b.release, s.cfg.GC.Tighten())
		}
		return b.giveBack, b, nil
	}
	n := lim.body
	if declared >= 0 {
		n = min(declared, lim.body)
	}
	release, err := s.bodies.acquire(ctx, c.Name, n*unaryMemFactor, worker)
	if err != nil {
		return nil, nil, err
	}
	if n >= tightBodyBytes {
		restore := s.cfg.GC.Tighten()
		return func() { release(); restore() }, body, nil
	}
	if lim.body <= SmallRequestBytes+envelopeSlack {
		// A small request is done with once read: a watch or an
		// assignment stream must not hold its share while it lasts.
		return release, &releaseAtEOF{ReadCloser: body, release: release}, nil
	}
	return release, body, nil
}

// releaseAtEOF gives a body's share of the budget back once the body is
// read to its end (or fails).
type releaseAtEOF struct {
	io.ReadCloser
	release func() // once only (admission.releaser)
}

func (b *releaseAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}

// tightBodyBytes is the body past which the collector runs more often
// while it is read and handled (GCPolicy.Tighten): reading a body grows a
// buffer by doubling, and without it the garbage of a few such bodies
// took RSS past their budget (40 chunked 25 MB bodies, one in memory at a
// time, grew RSS by 145-160 MB for 34 MB charged).
const tightBodyBytes = 4 << 20

// collectors are the budget's metrics.
func (a *admission) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_request_memory_budget_bytes",
			Help: "Memory request bodies in flight may hold (batchd serve --max-request-memory); one user at most half."},
			func() float64 { return float64(a.budget) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_request_memory_in_use_bytes",
			Help: "Memory the request bodies in flight hold now, as admission charges it (their size times what decoding costs)."},
			func() float64 { n, _, _, _ := a.stats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_request_memory_peak_bytes",
			Help: "The most memory request bodies in flight ever held at once, as admission charges it."},
			func() float64 { _, p, _, _ := a.stats(); return float64(p) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_request_memory_waits_total",
			Help: "Requests that waited for their share of the request memory budget."},
			func() float64 { _, _, w, _ := a.stats(); return float64(w) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_request_memory_refusals_total",
			Help: "Requests refused (ResourceExhausted) because their share of the request memory budget did not come in time."},
			func() float64 { _, _, _, r := a.stats(); return float64(r) }),
	}
}
