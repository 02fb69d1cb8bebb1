package server

import "sync"

// group collects work from many goroutines and hands it to one goroutine
// at a time, in batches (group commit): the first caller to find nobody
// draining starts a goroutine that calls drain with what is queued, at
// most max items a batch (0: no bound) and, when work is set, items
// whose work adds up to at most maxWork (a first item bigger than that
// goes alone), until the queue is empty. Callers wait for their own
// item's answer themselves.
type group[T any] struct {
	max     int
	maxWork int
	work    func(T) int // nil: every item counts as no work

	mu      sync.Mutex
	queue   []T
	leading bool
	added   int // items ever added (tests)
}

// add queues item and makes sure a goroutine drains the queue.
func (g *group[T]) add(item T, drain func([]T)) {
	g.mu.Lock()
	g.queue = append(g.queue, item)
	g.added++
	if !g.leading {
		g.leading = true
		go g.loop(drain)
	}
	g.mu.Unlock()
}

func (g *group[T]) loop(drain func([]T)) {
	for {
		g.mu.Lock()
		n := len(g.queue)
		if g.max > 0 {
			n = min(n, g.max)
		}
		if g.work != nil {
			sum := 0
			for i, item := range g.queue[:n] {
				if sum += g.work(item); sum > g.maxWork && i > 0 {
					n = i
					break
				}
			}
		}
		if n == 0 {
			g.leading = false
			g.mu.Unlock()
			return
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		drain(batch)
	}
}
