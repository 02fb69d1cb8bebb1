package sim

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"batchd/sched"
)

// RunAll runs every Params in ps, spread over workers goroutines (all
// cores when workers < 1), and returns the results in the order of ps. It
// stops at the first error. progress, when not nil, is called after each
// run with the number done (from one goroutine at a time). Runs whose
// results cannot differ (runKey) run once, and the others get a copy.
func RunAll(ctx context.Context, ps []Params, workers int, progress func(done, total int)) ([]Result, error) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	first := make([]int, len(ps)) // the run whose result ps[i] takes
	seen := make(map[Params]int, len(ps))
	todo := make([]int, 0, len(ps))
	for i, p := range ps {
		k := runKey(p)
		if j, ok := seen[k]; ok {
			first[i] = j
			continue
		}
		seen[k], first[i] = i, i
		todo = append(todo, i)
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
	for range min(workers, len(todo)) {
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
					progress(done, len(todo))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range todo {
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
	for i, j := range first {
		if j != i {
			out[i] = out[j]
			out[i].Params = ps[i].withDefaults()
			out[i].Jobs = slices.Clone(out[j].Jobs)
		}
	}
	return out, nil
}

// runKey is p with the switches that cannot change its run cleared, so
// that runs with equal keys have equal results (but for Result.Params and
// WallSeconds): with at most one task (job) per set, drawing the set size
// per set or once per user draws nothing (rng.intn); BatchCancels acts
// only under the batch policies, and only when a user changes their mind,
// which a change probability bound of 0 never does (the draw itself is
// made either way).
func runKey(p Params) Params {
	p = p.withDefaults()
	if p.SetSizeMax <= 1 {
		p.SetSizePerSet = false
	}
	batch := p.Sched.Policy == sched.PolicyBatchSRPT || p.Sched.Policy == sched.PolicyBatchFCFS || p.Sched.Policy == sched.PolicyBatchSRPTTask
	if !batch || p.ChangeProbMax == 0 {
		p.BatchCancels = false
	}
	return p
}
