package worker

// endedKeep is how many of the latest ended copies the worker remembers
// after it forgot them. A start that names one is stale: the server
// restates every copy it holds as live when a stream opens, and a
// copy's report can cross that restatement; by then the slot may be the
// next copy's. Copy ids are never reused, so remembering the latest few
// thousand covers any restatement in flight.
const endedKeep = 4096

// endedCopies remembers the ids of the copies that ended and were
// forgotten, the latest endedKeep of them. Guarded by agent.mu.
type endedCopies struct {
	ids  map[int64]struct{}
	ring []int64 // in the order they ended; next is the oldest once full
	next int
}

// add remembers id, forgetting the oldest beyond endedKeep.
func (e *endedCopies) add(id int64) {
	if e.ids == nil {
		e.ids = make(map[int64]struct{}, endedKeep)
	}
	if _, ok := e.ids[id]; ok {
		return
	}
	if len(e.ring) < endedKeep {
		e.ring = append(e.ring, id)
	} else {
		delete(e.ids, e.ring[e.next])
		e.ring[e.next] = id
		e.next = (e.next + 1) % endedKeep
	}
	e.ids[id] = struct{}{}
}

// has says whether id ended here lately.
func (e *endedCopies) has(id int64) bool {
	_, ok := e.ids[id]
	return ok
}
