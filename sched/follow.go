// Which copy of a task a follower of its live output watches.

package sched

import (
	"cmp"
	"slices"
)

// LiveCopy is one live (running or suspended) copy of a task, as the
// scheduler holds it.
type LiveCopy struct {
	Copy        CopyID
	Worker      WorkerID
	Speculative bool
	Suspended   bool
	// RemainingSeconds is the scheduler's estimate of the copy's remaining
	// run time (GRASS's t_rem).
	RemainingSeconds float64
}

// LiveCopies returns the live copies of ref, the one the scheduler
// expects to finish first at now first: running copies before suspended
// ones, then by least remaining time (t_rem: from progress reports, else
// the Pareto tail), then by copy id (the original first). It is empty when
// the task has no live copy or the scheduler does not hold it. It changes
// nothing.
func (s *Scheduler) LiveCopies(ref TaskRef, now Time) []LiveCopy {
	st := s.sets[ref.Set]
	if st == nil {
		return nil
	}
	t := st.task(ref.Index)
	if t == nil || len(t.copies) == 0 {
		return nil
	}
	out := make([]LiveCopy, 0, len(t.copies))
	for _, c := range t.copies {
		lc := LiveCopy{Copy: c.id, Speculative: c.spec, Suspended: c.state != cRunning, RemainingSeconds: s.tRem(c, now)}
		if c.worker != nil {
			lc.Worker = c.worker.id
		}
		out = append(out, lc)
	}
	slices.SortFunc(out, func(a, b LiveCopy) int {
		switch {
		case a.Suspended != b.Suspended:
			if a.Suspended {
				return 1
			}
			return -1
		case a.RemainingSeconds != b.RemainingSeconds:
			return cmp.Compare(a.RemainingSeconds, b.RemainingSeconds)
		}
		return cmp.Compare(a.Copy, b.Copy)
	})
	return out
}
