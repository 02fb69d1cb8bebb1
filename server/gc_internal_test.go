package server

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// tightenGC lowers GOGC while calls hold it, nests, restores the setting
// when the last one leaves, and leaves a lower setting or GOGC=off alone.
// Not parallel: GOGC is the process's (parallel tests wait for this one).
func TestTightenGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	restore1 := tightenGC()
	restore2 := tightenGC()
	if got := gcPercent(); got != tightGCPercent {
		t.Fatalf("GOGC %d while two calls hold it, want %d", got, tightGCPercent)
	}
	restore1()
	if got := gcPercent(); got != tightGCPercent {
		t.Fatalf("GOGC %d while one call holds it, want %d", got, tightGCPercent)
	}
	restore2()
	if got := gcPercent(); got != 100 {
		t.Fatalf("GOGC %d after the calls, want 100 back", got)
	}
	for _, low := range []int{-1, tightGCPercent / 2} {
		debug.SetGCPercent(low)
		restore := tightenGC()
		if got := gcPercent(); got != low {
			t.Fatalf("GOGC %d, want %d left alone", got, low)
		}
		restore()
		if got := gcPercent(); got != low {
			t.Fatalf("GOGC %d after the call, want %d", got, low)
		}
	}
}
