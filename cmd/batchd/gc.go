package main

import (
	"runtime/debug"
	"sync"
)

// processGC is the server.GCPolicy of `batchd serve`: the server is the
// whole process, so the process's collector is tuned for it (as GOMAXPROCS
// is, see --procs).
type processGC struct {
	mu   sync.Mutex
	n    int // Tighten calls not yet restored
	prev int // the GOGC the first of them found
}

// tightGCPercent is the GOGC Tighten sets.
const tightGCPercent = 10

// loadGCPercent is the GOGC Loosen sets.
const loadGCPercent = 200

// Tighten lowers the collector's target to tightGCPercent until restore is
// called. A big DiscloseStream holds its whole set while it stores it, and
// the store's encoding makes garbage; at the default GOGC=100 the heap
// grows to twice what is live before the collector runs, so a 100 MB set
// peaked at 2.5 times its size in RSS growth. At 10 it stays near 1.7
// times (bench/authmem), for more collections while such a call runs (the
// setting is the process's: other calls share the cost). Calls nest; the
// last one out restores the setting (a lower setting, or GOGC=off, is left
// alone) and returns the freed memory to the system: after ten
// 100,000-task discloses the server held 233 bytes per queued task, most
// of it freed heap.
func (g *processGC) Tighten() (restore func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		if g.prev = debug.SetGCPercent(tightGCPercent); g.prev < tightGCPercent {
			debug.SetGCPercent(g.prev) // lower already, or off (-1)
		}
	}
	g.n++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.n--; g.n == 0 {
			debug.SetGCPercent(g.prev)
			go debug.FreeOSMemory()
		}
	}
}

// Loosen raises the collector's target to loadGCPercent until restore is
// called, which also returns the garbage to the system (beside serving):
// with 10⁶ queued tasks the snapshot the server loads is a hundred
// megabytes read once and dropped, and a restarted server should not be
// left twice the size it needs.
func (g *processGC) Loosen() (restore func()) {
	prev := debug.SetGCPercent(loadGCPercent)
	return func() {
		debug.SetGCPercent(prev)
		go debug.FreeOSMemory()
	}
}

// FreeOSMemory collects and returns freed heap to the system.
func (g *processGC) FreeOSMemory() { debug.FreeOSMemory() }
