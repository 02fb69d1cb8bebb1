package server

import "sync"

// group collects work from many goroutines and hands it to one goroutine
// at a time, in batches (group commit): the first caller to find nobody
// draining starts a goroutine that calls drain with what is queued, at
// most max items a batch (0: no bound), until the queue is empty. When
// work is set, a batch also holds items whose work adds up to at most
// maxWork; an item bigger than that goes alone, and the smaller items
// queued behind it may pass it (see take). Callers wait for their own
// item's answer themselves.
type group[T any] struct {
	max     int
	maxWork int
	work    func(T) int // nil: items carry no work

	mu      sync.Mutex
	queue   []T
	leading bool
	lastBig bool // the last batch was one big item (take)
	added   int  // items ever added (tests)

	// gather, when set, may hold a batch back for more items under load
	// (finishgather.go); want is what its waiting leader waits for (0:
	// none waits) and wake ends that wait.
	gather *gatherRule
	want   int
	wake   chan struct{}
}

// add queues item and makes sure a goroutine drains the queue.
func (g *group[T]) add(item T, drain func([]T)) { g.addAll([]T{item}, drain) }

// addAll queues items, in their order, under one hold of the queue's
// lock, and makes sure a goroutine drains the queue.
func (g *group[T]) addAll(items []T, drain func([]T)) {
	if len(items) == 0 {
		return
	}
	g.mu.Lock()
	g.queue = append(g.queue, items...)
	g.added += len(items)
	if g.gather != nil {
		g.wakeLeader()
	}
	if !g.leading {
		g.leading = true
		go g.loop(drain)
	}
	g.mu.Unlock()
}

// busy says whether items are queued or a batch is being drained.
func (g *group[T]) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

func (g *group[T]) loop(drain func([]T)) {
	for drained := false; ; drained = true {
		g.mu.Lock()
		if g.gather != nil {
			if drained {
				g.gather.last = g.gather.now()
			}
			g.holdBack()
		}
		batch := g.take()
		if batch == nil {
			g.leading = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		drain(batch)
	}
}

// take removes the next batch from the queue (nil when it is empty).
// Items keep their order, except that after a big item (work past
// maxWork, which goes alone) the small items queued behind other big ones
// go first: a small item waits for at most one big item, not for all
// those queued ahead of it, and a big item at the head of the queue goes
// at least every other batch. Requires mu.
func (g *group[T]) take() []T {
	if len(g.queue) == 0 {
		return nil
	}
	if g.work == nil {
		n := len(g.queue)
		if g.max > 0 {
			n = min(n, g.max)
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		return batch
	}
	big := func(item T) bool { return g.work(item) > g.maxWork }
	if big(g.queue[0]) && !g.lastBig {
		batch := g.queue[:1:1]
		g.queue = g.queue[1:]
		g.lastBig = true
		return batch
	}
	var batch, rest []T
	sum, full := 0, false
	for _, item := range g.queue {
		if !full && !big(item) {
			if w := g.work(item); (g.max == 0 || len(batch) < g.max) && sum+w <= g.maxWork {
				batch, sum = append(batch, item), sum+w
				continue
			}
			full = true // the small items behind it keep their order
		}
		rest = append(rest, item)
	}
	if len(batch) == 0 { // big items only: the first goes
		batch, rest = g.queue[:1:1], g.queue[1:]
		g.lastBig = true
	} else {
		g.lastBig = false
	}
	g.queue = rest
	return batch
}
