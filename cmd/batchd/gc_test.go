package main

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

// Tighten lowers GOGC while calls hold it, nests, restores the setting
// when the last one leaves, and leaves a lower setting or GOGC=off alone;
// Loosen raises it until restored. Not parallel: GOGC is the process's.
func TestProcessGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var g processGC
	restore1 := g.Tighten()
	restore2 := g.Tighten()
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
		restore := g.Tighten()
		if got := gcPercent(); got != low {
			t.Fatalf("GOGC %d, want %d left alone", got, low)
		}
		restore()
		if got := gcPercent(); got != low {
			t.Fatalf("GOGC %d after the call, want %d", got, low)
		}
	}
	debug.SetGCPercent(100)
	restore := g.Loosen()
	if got := gcPercent(); got != loadGCPercent {
		t.Fatalf("GOGC %d while loosened, want %d", got, loadGCPercent)
	}
	restore()
	if got := gcPercent(); got != 100 {
		t.Fatalf("GOGC %d after Loosen's restore, want 100 back", got)
	}
}
