package server

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatherHarness is a group with a gathering rule whose clock, running
// copies and timer the test sets: the wait's timer fires only when the
// test fires it, and each wait that starts says so on waits.
type gatherHarness struct {
	g       group[int]
	held    atomic.Int64
	mu      sync.Mutex
	clock   time.Time
	running int
	fire    chan time.Time
	waits   chan time.Duration // the bound of each wait begun
	batches chan []int
}

func newGatherHarness() *gatherHarness {
	h := &gatherHarness{clock: time.Unix(1000, 0), fire: make(chan time.Time), waits: make(chan time.Duration, 16), batches: make(chan []int, 16)}
	h.g.gather = &gatherRule{bound: gatherBound, window: gatherWindow, siblings: gatherSiblings, max: gatherMax, held: &h.held,
		running: func() int { h.mu.Lock(); defer h.mu.Unlock(); return h.running },
		now:     func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.clock },
		after: func(d time.Duration) (<-chan time.Time, func() bool) {
			h.waits <- d
			return h.fire, func() bool { return true }
		}}
	return h
}

func (h *gatherHarness) set(running int, advance time.Duration) {
	h.mu.Lock()
	h.running, h.clock = running, h.clock.Add(advance)
	h.mu.Unlock()
}

func (h *gatherHarness) add(items ...int) {
	h.g.addAll(items, func(b []int) { h.batches <- b })
}

// settle waits until the group's leader has returned (after its last
// batch, having noted when it returned).
func (h *gatherHarness) settle() {
	for {
		h.g.mu.Lock()
		leading := h.g.leading
		h.g.mu.Unlock()
		if !leading {
			return
		}
		runtime.Gosched()
	}
}

// waitBegun returns the bound of the next wait that begins.
func (h *gatherHarness) waitBegun(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-h.waits:
		return d
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the leader did not wait")
		return 0
	}
}

// batch returns the next batch drained.
func (h *gatherHarness) batch(t *testing.T) string {
	t.Helper()
	select {
	case b := <-h.batches:
		return fmt.Sprint(b)
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("no batch drained")
		return ""
	}
}

// Under load (a group commit returned just now, 64 copies running) the
// leader of an end waits for more: the ends that come during the wait
// join its batch, and the wait ends at its bound (the test fires the
// timer) or as soon as every running copy's end is queued.
func TestFinishEndsGatherUnderLoad(t *testing.T) {
	t.Parallel()
	h := newGatherHarness()
	h.set(64, 0)
	h.add(1) // the first commit ever: at once
	if got := h.batch(t); got != "[1]" {
		t.Fatalf("first batch %s, want [1]", got)
	}
	h.settle()
	h.set(64, 100*time.Microsecond) // the previous commit returned 100 µs ago
	h.add(2)
	if d := h.waitBegun(t); d != gatherBound {
		t.Fatalf("the leader waits at most %v, want %v", d, gatherBound)
	}
	h.add(3)
	h.add(4, 5)
	h.fire <- h.clock.Add(gatherBound) // the bound passes
	if got := h.batch(t); got != "[2 3 4 5]" {
		t.Fatalf("batch %s, want the four ends that came during the wait, [2 3 4 5]", got)
	}
	h.settle()

	// Six copies running: the wait ends once all six ends are queued,
	// without its timer.
	h.set(6, 200*time.Microsecond)
	h.add(10)
	h.waitBegun(t)
	h.add(11, 12)
	h.add(13, 14, 15)
	if got := h.batch(t); got != "[10 11 12 13 14 15]" {
		t.Fatalf("batch %s, want [10 11 12 13 14 15]", got)
	}
	h.settle()
	if n := h.held.Load(); n != 2 {
		t.Errorf("%d batches held, want 2", n)
	}
}

// An end on an idle server commits at once: the first end, an end long
// after the previous commit, and an end with too few other copies running
// (a lone request's copy) never start a wait.
func TestFinishEndIdleCommitsAtOnce(t *testing.T) {
	t.Parallel()
	h := newGatherHarness()
	for _, c := range []struct {
		name    string
		running int
		advance time.Duration
	}{
		{"first end", 64, 0},
		{"previous commit 5 ms ago", 64, 5 * time.Millisecond},
		{"its own copy alone running", 1, 0},
		{"three others running", gatherSiblings, 0},
	} {
		h.set(c.running, c.advance)
		h.add(1)
		if got := h.batch(t); got != "[1]" {
			t.Fatalf("%s: batch %s, want [1]", c.name, got)
		}
		h.settle()
		if len(h.waits) != 0 || h.held.Load() != 0 {
			t.Fatalf("%s: the leader waited", c.name)
		}
	}
}
