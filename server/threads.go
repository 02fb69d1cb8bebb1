package server

import (
	"runtime"
	rmetrics "runtime/metrics"
	"sync"

	"batchd/store"
)

// threadSpare is how many threads beyond its present need the server
// keeps for the next blocking calls.
const threadSpare = 8

// threadEndsMax bounds the threads one trim ends.
const threadEndsMax = 64

// threadCounts returns the OS threads the Go runtime holds and how many
// the server needs now: one per processor, one per goroutine in a
// system call or a cgo call (a copy's wait, a fork, an SQLite call),
// the store's connections (each SQLite call holds a thread while it
// lasts), and threadSpare. ok is false on a runtime without these
// metrics.
func threadCounts() (total, keep int, ok bool) {
	samples := []rmetrics.Sample{{Name: "/sched/threads/total:threads"},
		{Name: "/sched/goroutines/not-in-go:goroutines"}, {Name: "/sched/gomaxprocs:threads"}}
	rmetrics.Read(samples)
	for _, v := range samples {
		if v.Value.Kind() != rmetrics.KindUint64 {
			return 0, 0, false
		}
	}
	total = int(samples[0].Value.Uint64())
	keep = int(samples[2].Value.Uint64()) + int(samples[1].Value.Uint64()) + store.MaxConns() + threadSpare
	return total, keep, true
}

// endThreads ends n of the runtime's OS threads: a goroutine that exits
// locked to its thread takes the thread with it (runtime.LockOSThread),
// and the processor it ran on goes to an idle thread. Locked threads
// (a copy's forking thread while the copy lives: Pdeathsig is bound to
// it) run only their own goroutine, so none of them is ended; when no
// idle thread is left, the runtime starts one instead of the one ended.
func endThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		}()
	}
	wg.Wait()
}

// trimThreads ends the OS threads that the runtime keeps past the
// server's need (threadCounts), at most threadEndsMax at a time. The Go
// runtime never ends a thread it started: a burst of blocking calls (a
// stall of the machine that left a dozen copies' waits, forks and SQLite
// calls in the kernel at once) left its high-water mark for good: in a
// soak at a steady 160 tasks/s on 4 slots, threads went from 25 to 50 in
// three seconds of a load spike, and to 69 by the next. It returns how
// many it ended.
func trimThreads() int {
	total, keep, ok := threadCounts()
	if !ok || total <= keep {
		return 0
	}
	n := min(total-keep, threadEndsMax)
	endThreads(n)
	return n
}
