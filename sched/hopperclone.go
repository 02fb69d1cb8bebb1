// Hopper's variants for the simulator's deciding experiment: the desired
// allocation rounded down (Config.VirtualFloor) and shares filled by
// cloning (Config.HopperClone), Hopper §4.1's own model.

package sched

import (
	"math"
	"slices"
)

// desiredV is job's desired allocation under the configuration: ⌈c·T⌉,
// or ⌊c·T⌋ with Config.VirtualFloor.
func (s *Scheduler) desiredV(c float64, remaining int) int {
	return desiredRound(c, remaining, s.cfg.VirtualFloor)
}

// desiredRound is desired, or with floorV ⌊c·remaining⌋ (never below
// remaining: c ≥ 1).
func desiredRound(c float64, remaining int, floorV bool) int {
	if !floorV {
		return desired(c, remaining)
	}
	return max(remaining, int(math.Floor(c*float64(remaining)+1e-9)))
}

// fillJobClone fills job st up to target slots by cloning (Config.
// HopperClone): its queued tasks first, then extra copies of its running
// requested tasks, the task with the fewest live copies first (then by
// index), without waiting for a straggler, as SpecClone does with the
// free slots but bounded by the job's Hopper share.
func (s *Scheduler) fillJobClone(st *set, target int, now Time, out []Decision) []Decision {
	for st.held < target && s.slotsLeft(true) && !s.capped(st) && !s.fairCapped(st) {
		q := st.rq.peek()
		if q == nil {
			break
		}
		if !s.startQueued(q, "requested", slotFreeOrPreempt, now, &out) {
			if q.plain() {
				return out
			}
			if q.routed() && q.routeOnly() {
				break
			}
			s.setAside(q)
		}
	}
	if st.held >= target || s.freeN == 0 || len(st.running) == 0 {
		return out
	}
	ts := make([]*task, 0, len(st.running))
	for _, t := range st.running {
		if !t.noSpec && s.reqClass(t) && !t.done() && len(t.copies) > 0 {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b *task) int {
		if len(a.copies) != len(b.copies) {
			return len(a.copies) - len(b.copies)
		}
		return int(a.index) - int(b.index)
	})
	// Round by round: every task of the fewest copies gets one more
	// before any gets two more; a copy added keeps ts sorted when the
	// round's tasks are taken in order and the next round restarts.
	for st.held < target && s.freeN > 0 && len(ts) > 0 && !s.capped(st) && !s.fairCapped(st) {
		n := len(ts[0].copies)
		added := false
		for _, t := range ts {
			if len(t.copies) > n || st.held >= target || s.freeN == 0 || s.capped(st) {
				break
			}
			if !s.speculate(t, "clone", slotFree, now, &out) {
				return out
			}
			added = true
		}
		if !added {
			break
		}
		slices.SortStableFunc(ts, func(a, b *task) int { return len(a.copies) - len(b.copies) })
	}
	return out
}
