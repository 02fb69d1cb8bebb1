// Package freelist keeps a bounded number of large, reusable values (a
// compressor, a pipe's read buffer) across garbage collections.
//
// A sync.Pool drops what it holds at every second collection. A server
// that collects several times a second under load (as batchd's does at
// hundreds of tasks a second) then makes a new value for nearly every use:
// a gzip compressor for a watch message is about 1 MB, which was a fifth
// of all the bytes the server allocated per task. A List keeps up to Max
// values for good, so the memory it holds is bounded by Max values and
// what it saves does not depend on how often the collector runs.
//
//	var bufs = freelist.List[*[]byte]{Max: 128, New: func() *[]byte { b := make([]byte, 32<<10); return &b }}
//	b := bufs.Get()
//	defer bufs.Put(b)
package freelist

import "sync"

// List is a bounded free list. The zero value with New set is ready; Max
// 0 keeps nothing (every Get calls New).
type List[T any] struct {
	// Max is how many values the list keeps at most; a Put beyond it
	// leaves the value to the collector.
	Max int
	// New makes a value when the list is empty.
	New func() T

	mu   sync.Mutex
	free []T
}

// Get returns a kept value, or a new one.
func (l *List[T]) Get() T {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		v := l.free[n-1]
		var zero T
		l.free[n-1] = zero
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return v
	}
	l.mu.Unlock()
	return l.New()
}

// Put keeps v for a later Get, unless Max values are kept already.
func (l *List[T]) Put(v T) {
	l.mu.Lock()
	if len(l.free) < l.Max {
		l.free = append(l.free, v)
	}
	l.mu.Unlock()
}

// Len is how many values the list keeps now.
func (l *List[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free)
}
