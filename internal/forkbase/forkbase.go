// Package forkbase is the baseline the dispatch benchmarks measure
// batchd against (bench.BenchmarkPipeline, worker.BenchmarkCopies): a
// plain fork/exec/wait of `true` with os/exec on as many goroutines as
// slots, and this process's own CPU time, so that both benchmarks
// subtract the same parent's side of a fork.
package forkbase

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// SelfCPU is this process's CPU time in seconds (user + system), its
// children excluded; 0 when getrusage fails.
func SelfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// Rate runs n copies of `true` on par goroutines with os/exec and
// returns copies per second and the CPU seconds this process spent per
// copy: the parent's side of fork, exec and wait, which a server that
// runs copies pays too. The first error stops the goroutine that met it.
func Rate(n, par int) (rate, parentCPU float64, err error) {
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	var mu sync.Mutex
	cpu0 := SelfCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for range work {
				if e := exec.Command("true").Run(); e != nil {
					mu.Lock()
					if err == nil {
						err = e
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), (SelfCPU() - cpu0) / float64(n), err
}
