package server

import (
	"runtime"
	rmetrics "runtime/metrics"
	"sync"
	"testing"
	"time"
)

func runtimeThreads(t *testing.T) int {
	t.Helper()
	s := []rmetrics.Sample{{Name: "/sched/threads/total:threads"}}
	rmetrics.Read(s)
	if s[0].Value.Kind() != rmetrics.KindUint64 {
		t.Skip("this runtime does not count its threads")
	}
	return int(s[0].Value.Uint64())
}

// TestEndThreadsAfterBurst: threads the runtime started for a burst of
// goroutines that each held one (as copies' waits and SQLite calls do)
// stay after the burst, and a trim ends them down to the server's need.
func TestEndThreadsAfterBurst(t *testing.T) {
	trimmed := func(what string) int { // the threads once a trim ended what it could
		ended := trimThreads()
		hang := time.Now().Add(time.Minute)
		for {
			total, keep, _ := threadCounts()
			if total <= keep+2 {
				return total
			}
			if time.Now().After(hang) {
				t.Fatalf("%s: %d threads a minute after a trim that ended %d (need %d)", what, total, ended, keep)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	base := trimmed("before the burst")
	const burst = 32
	held := make(chan struct{})
	var in, out sync.WaitGroup
	for range burst {
		in.Add(1)
		out.Add(1)
		go func() {
			defer out.Done()
			runtime.LockOSThread() // a thread of its own until it unlocks
			in.Done()
			<-held
			runtime.UnlockOSThread()
		}()
	}
	in.Wait()
	close(held)
	out.Wait()
	kept := runtimeThreads(t)
	if kept < burst {
		t.Fatalf("%d threads before the burst, %d after it: the runtime did not keep them", base, kept)
	}
	trimmed("after the burst")
}
