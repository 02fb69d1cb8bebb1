package sched

import (
	"cmp"
	"slices"
)

// SetLoad is one open set's work in the scheduler at a moment: what the
// server's history samples for a set's charts.
type SetLoad struct {
	Set SetID
	// Queued counts its tasks waiting for a copy (both classes).
	Queued int
	// Running counts its tasks with a running copy.
	Running int
	// Done counts its tasks that need no more runs (executed, finished or
	// canceled).
	Done int
	// Total counts its tasks.
	Total int
}

// SetLoads returns the load of every set the scheduler holds (its open
// sets), by set id. It scans each set's tasks once.
func (s *Scheduler) SetLoads() []SetLoad {
	out := make([]SetLoad, 0, len(s.sets))
	for id, st := range s.sets {
		l := SetLoad{Set: id, Queued: st.dq.len() + st.rq.len(), Running: len(st.running)}
		for _, t := range st.tasks {
			if t == nil {
				continue
			}
			l.Total++
			if t.done() {
				l.Done++
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b SetLoad) int { return cmp.Compare(a.Set, b.Set) })
	return out
}
