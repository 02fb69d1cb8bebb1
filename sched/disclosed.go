// The disclosed class: FCFS (or per-owner fair) starts on the slots the
// requested class leaves, then speculation of disclosed stragglers.

package sched

import (
	"slices"
)

// decideDisclosed starts disclosed tasks in FCFS order (sets by disclosure
// time, tasks by index) on the slots still free, then speculates running
// disclosed copies on whatever is left.
func (s *Scheduler) decideDisclosed(now Time, out []Decision) []Decision {
	if s.cfg.DisclosedFairShare {
		return s.decideDisclosedFair(now, out)
	}
	budget := s.cfg.Speculation == SpecBudgeted
	// Sets whose next task finds no room for its resources sit out this
	// Decide, so that they hold up no other set.
	var skipped []*set
	for s.freeN > s.reserve && len(s.dsets.items) > 0 {
		if budget && s.running-s.specLive >= s.slots-s.cfg.Budget {
			break
		}
		st := s.dsets.items[0]
		t := st.dq.peek()
		w, slot, ok := s.obtainSlot(t, nil, slotFree, now, &out)
		if !ok {
			if s.plainFor(t) {
				break
			}
			s.dsets.remove(st)
			skipped = append(skipped, st)
			continue
		}
		s.startCopy(t, w, slot, false, "disclosed", now, &out)
	}
	for _, st := range skipped {
		s.syncDisclosed(st)
	}
	return out
}

// decideDisclosedFair is decideDisclosed with a per-owner fair share: each
// free slot goes to the first queued task (by index) of the set whose owner
// holds the fewest running disclosed copies per unit of its fair-share
// weight, ties broken FCFS (setBefore).
func (s *Scheduler) decideDisclosedFair(now Time, out []Decision) []Decision {
	budget := s.cfg.Speculation == SpecBudgeted
	held := make(map[string]int)
	skip := make(map[*set]bool)
	for _, c := range s.preempt.items {
		held[c.task.set.owner]++
	}
	for s.freeN > s.reserve && len(s.dsets.items) > 0 {
		if budget && s.running-s.specLive >= s.slots-s.cfg.Budget {
			break
		}
		var best *set
		for _, st := range s.dsets.items {
			if st.dq.peek() == nil || skip[st] {
				continue
			}
			if best == nil {
				best = st
				continue
			}
			// Fewest running copies per unit of weight (fairshare.go).
			hb := float64(held[best.owner]) * s.userWeight(st.owner)
			hs := float64(held[st.owner]) * s.userWeight(best.owner)
			if hs < hb || (hs == hb && setBefore(st, best)) {
				best = st
			}
		}
		if best == nil {
			break
		}
		t := best.dq.peek()
		w, slot, ok := s.obtainSlot(t, nil, slotFree, now, &out)
		if !ok {
			if s.plainFor(t) {
				break
			}
			skip[best] = true
			continue
		}
		s.startCopy(t, w, slot, false, "disclosed", now, &out)
		held[best.owner]++
	}
	return out
}

// speculateDisclosed speculates running disclosed copies on the slots left
// once no disclosed task is queued.
func (s *Scheduler) speculateDisclosed(now Time, out []Decision) []Decision {
	budget := s.cfg.Speculation == SpecBudgeted
	if len(s.dsets.items) > 0 || s.cfg.Speculation == SpecNone || len(s.preempt.items) == 0 {
		return out
	}
	if budget && s.specLive >= s.cfg.Budget {
		return out
	}
	// Speculate disclosed stragglers: GS's rule, at most MaxEarlyCopies
	// copies, highest t_rem first. Only slots nothing requested wanted
	// reach this point.
	var sets []*set
	for _, c := range s.preempt.items {
		if !c.task.set.marked {
			c.task.set.marked = true
			sets = append(sets, c.task.set)
		}
	}
	var all []specCand
	for _, st := range sets {
		st.marked = false
		all = append(all, s.candidates(st, false, false, s.cfg.MaxEarlyCopies, now, nil)...)
	}
	slices.SortFunc(all, func(a, b specCand) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if a.t.set != b.t.set {
			if setBefore(a.t.set, b.t.set) {
				return -1
			}
			return 1
		}
		return int(a.t.index) - int(b.t.index)
	})
	for _, cd := range all {
		if s.freeN <= s.reserve || (budget && s.specLive >= s.cfg.Budget) {
			break
		}
		if s.capped(cd.t.set) {
			continue
		}
		s.speculate(cd.t, "speculate-disclosed", slotFree, now, &out)
	}
	return out
}
