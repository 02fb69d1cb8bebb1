package sim

// evKind says what a simulator event is.
type evKind uint8

const (
	evCopyEnd    evKind = iota + 1 // a running copy has done all its work
	evProgress                     // a running copy reports its progress
	evUser                         // a closed-loop user finishes thinking (or starts)
	evArrival                      // an open-loop job arrives
	evTick                         // the dispatch tick: call Decide (Params.DecideEvery)
	evWorkerDown                   // a worker fails: its live copies are lost
	evWorkerUp                     // a failed worker comes back
)

// simEvent is one entry of the event queue. Copy events carry the copy's
// generation: a suspend or kill bumps it, and stale entries are skipped when
// they surface (lazy deletion, no search in the heap).
type simEvent struct {
	t    float64
	seq  uint64 // insertion order: ties break first-in first-out
	id   int64  // copy id, user index or job index
	gen  uint32
	kind evKind
}

func (a *simEvent) before(b *simEvent) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

// eventQueue is a binary min-heap of simEvents by (time, insertion order).
// It stores values, not pointers, so pushing and popping allocate nothing
// once the backing array has grown.
type eventQueue struct {
	h   []simEvent
	seq uint64
}

func (q *eventQueue) len() int { return len(q.h) }

func (q *eventQueue) push(e simEvent) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].before(&q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// peek returns the earliest event; the queue must not be empty.
func (q *eventQueue) peek() *simEvent { return &q.h[0] }

func (q *eventQueue) pop() simEvent {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.h[r].before(&q.h[l]) {
			m = r
		}
		if !q.h[m].before(&q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
