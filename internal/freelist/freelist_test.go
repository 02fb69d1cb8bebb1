package freelist_test

import (
	"runtime"
	"testing"

	"batchd/internal/freelist"
)

// TestListKeepsAcrossCollections: what was put back is got again after
// collections, where a sync.Pool would have dropped it.
func TestListKeepsAcrossCollections(t *testing.T) {
	made := 0
	l := freelist.List[*[]byte]{Max: 2, New: func() *[]byte { made++; b := make([]byte, 1<<20); return &b }}
	a, b := l.Get(), l.Get()
	l.Put(a)
	l.Put(b)
	runtime.GC()
	runtime.GC()
	runtime.GC()
	if got := l.Get(); got != b {
		t.Fatalf("Get after collections returned %p, want the last value put, %p", got, b)
	}
	if got := l.Get(); got != a {
		t.Fatalf("second Get returned %p, want %p", got, a)
	}
	if made != 2 {
		t.Fatalf("New called %d times, want 2", made)
	}
}

// TestListBounded: a Put beyond Max keeps nothing more.
func TestListBounded(t *testing.T) {
	l := freelist.List[int]{Max: 2, New: func() int { return -1 }}
	for i := range 5 {
		l.Put(i)
	}
	if n := l.Len(); n != 2 {
		t.Fatalf("Len %d after 5 puts, want Max 2", n)
	}
	if got := []int{l.Get(), l.Get(), l.Get()}; got[0] != 1 || got[1] != 0 || got[2] != -1 {
		t.Fatalf("gets %v, want [1 0 -1] (kept last in, first out, then New)", got)
	}
	var none freelist.List[int]
	none.New = func() int { return 7 }
	none.Put(3)
	if got := none.Get(); got != 7 {
		t.Fatalf("Max 0 kept a value: got %d", got)
	}
}
