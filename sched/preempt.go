// Preemption: requested work takes the slots of disclosed copies, which are
// suspended (or killed) and later resume on their own workers.

package sched

import (
	"slices"
)

// backfillRequested keeps requested work from waiting behind disclosed
// work: queued requested tasks beyond their job's Hopper share take the
// free slots nobody reserved, then the slots of running disclosed copies.
// Slots held by holdShare (a job's share during the detection delay) and
// Budgeted speculation's slots stay free.
func (s *Scheduler) backfillRequested(now Time, out []Decision) []Decision {
	if s.queuedReq == 0 {
		return out
	}
	preempt := s.cfg.Preemption != PreemptOff
	it := &s.jit
	it.start(s.jobs.root)
	for st := it.next(); st != nil; st = it.next() {
		if s.freeN <= s.reserve && (!preempt || len(s.preempt.items) == 0) {
			// No slot for anyone (the loop below would return at its
			// first task): do not walk jobs that are capped or over
			// their owner's share.
			return out
		}
		for st.rq.len() > 0 && !s.capped(st) && !s.fairCapped(st) {
			mode := slotFree
			if s.freeN <= s.reserve {
				if !preempt || len(s.preempt.items) == 0 {
					return out
				}
				mode = slotPreemptOnly
			}
			if t := st.rq.peek(); !s.startQueued(t, "requested", mode, now, &out) {
				if s.plainFor(t) {
					return out
				}
				if t.plain() || (t.routed() && t.routeOnly()) {
					break // only workers bound to other owners (or off its route) have room: so for the set's other tasks
				}
				s.setAside(t) // no room for its resources: the next may fit
			}
		}
	}
	return out
}

// preemptCopy suspends c (or kills it, where suspension is off or the
// worker cannot suspend) to free its slot for requested work.
func (s *Scheduler) preemptCopy(c *liveCopy, now Time, out *[]Decision) {
	w := c.worker
	if s.cfg.Preemption == PreemptSuspend && w.canSuspend {
		*out = append(*out, s.suspendCopy(c, now, "preempted"))
		return
	}
	d := Decision{Kind: DecisionKill, Copy: c.id, Task: c.task.ref(), Slot: SlotRef{Worker: w.id, Slot: c.slot}, Speculative: c.spec, Reason: "preempted"}
	t := c.task
	s.endCopy(c)
	if len(t.copies) == 0 {
		s.enqueue(t)
	}
	*out = append(*out, d)
}

// suspendCopy suspends running copy c on its worker (which can suspend),
// freeing its slot, and returns the Suspend decision.
func (s *Scheduler) suspendCopy(c *liveCopy, now Time, reason string) Decision {
	w := c.worker
	d := Decision{Kind: DecisionSuspend, Copy: c.id, Task: c.task.ref(), Slot: SlotRef{Worker: w.id, Slot: c.slot}, Speculative: c.spec, Reason: reason}
	run := c.runTime(now)
	s.freeSlot(c)
	c.state = cSuspended
	c.runSoFar = run
	w.suspended = append(w.suspended, c)
	s.suspended++
	c.task.set.nsusp++
	return d
}

// resumeSuspended resumes suspended copies on free slots of their own
// workers, before any new disclosed copy starts there: requested tasks
// first, then disclosed ones in FCFS order.
func (s *Scheduler) resumeSuspended(now Time, out []Decision) []Decision {
	var ws []*worker
	for _, w := range s.wheap.items {
		if len(w.suspended) > 0 && w.free() > 0 {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b *worker) int {
		if a.id < b.id {
			return -1
		} else if a.id > b.id {
			return 1
		}
		return 0
	})
	for _, w := range ws {
		cs := slices.Clone(w.suspended)
		slices.SortFunc(cs, func(a, b *liveCopy) int {
			ra, rb := s.reqClass(a.task), s.reqClass(b.task)
			if ra != rb {
				if ra {
					return -1
				}
				return 1
			}
			if a.task.set != b.task.set {
				if setBefore(a.task.set, b.task.set) {
					return -1
				}
				return 1
			}
			if a.task.index != b.task.index {
				return int(a.task.index) - int(b.task.index)
			}
			return cmpCopyID(a.id, b.id)
		})
		for _, c := range cs {
			if w.free() == 0 || s.freeN <= s.reserve {
				break
			}
			if w.free() < c.task.slots() || c.task.held {
				continue
			}
			if (s.noDisc && !s.reqClass(c.task)) || s.capped(c.task.set) || (s.reqClass(c.task) && s.fairCapped(c.task.set)) {
				continue
			}
			if s.cfg.Speculation == SpecBudgeted && !c.spec && s.running-s.specLive >= s.slots-s.cfg.Budget {
				continue
			}
			s.resumeCopy(c, now, "resume", &out)
		}
	}
	return out
}
