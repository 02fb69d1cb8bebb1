// Copies' ends held back under load, so that a group commit carries more
// of them.

package server

import (
	"sync/atomic"
	"time"
)

// The finish group's gathering rule (gatherRule), after PostgreSQL's
// commit_delay and commit_siblings: an end that finds the writer free is
// committed at once unless the finish path is under sustained load, and is
// then held back at most gatherBound.
const (
	// gatherBound is the longest a group commit of ends waits for more.
	gatherBound = time.Millisecond
	// gatherWindow: the finish path is under load when the previous group
	// commit of ends returned less than this before the next would start.
	gatherWindow = time.Millisecond
	// gatherSiblings: ... and when at least this many other copies are
	// running, whose ends may come within the wait.
	gatherSiblings = 4
	// gatherMax is the batch that goes at once: BenchmarkGroupCommit's
	// cost per end levels off by 64 a commit.
	gatherMax = 64
)

// gatherRule decides whether a group's leader, about to take a batch,
// waits for more items first. Its fields but last are set once, before
// the group is used; last is guarded by the group's mu.
type gatherRule struct {
	bound    time.Duration // the longest wait
	window   time.Duration // under load: the previous batch returned less than this ago
	siblings int           // under load: at least this many other items may come
	max      int           // a batch this large goes at once
	// running is how many copies run now, the ends queued among them
	// (the scheduler's count as of its last change).
	running func() int
	// now is the rule's clock (monotonic, the real one in the server:
	// the hold is about CPU and latency, not about what the store stamps).
	now func() time.Time
	// after starts the wait's timer: its channel, and a stop for a wait
	// that ended early.
	after func(time.Duration) (<-chan time.Time, func() bool)

	held *atomic.Int64 // counts the batches whose leader waited

	last time.Time // when the previous batch's drain returned (zero: never)
}

// newGatherRule returns the rule of the finish group: the constants above,
// the real clock, running, and held to count the waits in.
func newGatherRule(running func() int, held *atomic.Int64) *gatherRule {
	return &gatherRule{bound: gatherBound, window: gatherWindow, siblings: gatherSiblings, max: gatherMax,
		running: running, now: time.Now, held: held,
		after: func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}}
}

// hold says whether the leader of queued items waits: how many queued
// items end the wait early (want) and how long it waits at most (bound;
// 0: go at once). An idle server never waits: not for the first batch,
// not when the previous one returned window or more ago (every item
// before these was committed by then, so none came within window of
// them either), and not with fewer than siblings other copies running.
// Requires the group's mu.
func (r *gatherRule) hold(queued int) (want int, bound time.Duration) {
	if queued >= r.max || r.last.IsZero() || r.now().Sub(r.last) >= r.window {
		return 0, 0
	}
	running := r.running()
	if running-queued < r.siblings {
		return 0, 0
	}
	return min(r.max, running), r.bound
}

// holdBack waits, when g.gather says so, until want items are queued or
// its bound has passed. Requires g.mu, which it releases while it waits.
func (g *group[T]) holdBack() {
	if len(g.queue) == 0 {
		return // nothing to hold: the leader ends
	}
	want, bound := g.gather.hold(len(g.queue))
	if bound <= 0 || len(g.queue) >= want {
		return
	}
	if g.wake == nil {
		g.wake = make(chan struct{}, 1)
	}
	select {
	case <-g.wake: // a signal left over from a wait its timer ended
	default:
	}
	g.want = want
	g.gather.held.Add(1)
	g.mu.Unlock()
	c, stop := g.gather.after(bound)
	select {
	case <-g.wake:
		stop()
	case <-c:
	}
	g.mu.Lock()
	g.want = 0
}

// wakeLeader ends the leader's wait once the items it waits for are
// queued. Requires g.mu.
func (g *group[T]) wakeLeader() {
	if g.want > 0 && len(g.queue) >= g.want {
		g.want = 0
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}
