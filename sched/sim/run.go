package sim

import (
	"context"
	"runtime"
	"sync"
)

// RunAll runs every Params in ps, spread over workers goroutines (all
// cores when workers < 1), and returns the results in the order of ps. It
// stops at the first error. progress, when not nil, is called after each
// run with the number done (from one goroutine at a time).
func RunAll(ctx context.Context, ps []Params, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]Result, len(ps))
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	for range min(workers, len(ps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := Run(ctx, ps[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				out[i] = r
				done++
				if progress != nil && err == nil {
					progress(done, len(ps))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range ps {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
