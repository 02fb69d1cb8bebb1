package sched

// Decide returns what the driver must do now: kills queued by events,
// preemptions, resumes and starts, in that order. Every decision is already
// applied to the scheduler's state: a Start holds its slot and its CopyID,
// a Kill or Suspend has freed its slot.
//
// The pipeline (README.md draws it): the requested class first, its slots
// split between jobs by Hopper and filled inside each job by GRASS; then
// queued requested tasks beyond their job's share take unreserved slots or
// preempt disclosed copies; then suspended copies resume on their workers;
// then disclosed work starts in FCFS order; then spare slots go to
// requested and disclosed stragglers. A job's unused Hopper share stays
// free only for the detection delay (holdShare); otherwise the requested
// class is work-conserving, and slots no requested task wants are lent to
// disclosed work. When no slot is free and nothing can be preempted,
// Decide returns at once.
func (s *Scheduler) Decide(now Time) []Decision {
	s.tickTo(now)
	out := s.pending
	s.pending = nil
	s.flushKeys()
	canPreempt := s.cfg.Preemption != PreemptOff && len(s.preempt.items) > 0
	if s.freeN == 0 && (!canPreempt || s.jobs.n == 0) && !s.preemptsRequested() {
		return out
	}
	s.reserve = 0
	s.holdForResources = false
	out = s.fairFill(now, out)
	out = s.resumeRequested(now, out)
	out = s.decideRequested(now, out)
	if s.cfg.Speculation == SpecBudgeted {
		// Budgeted speculation keeps its slots for copies, whoever is
		// queued.
		s.reserve = max(0, s.cfg.Budget-s.specLive)
	}
	out = s.backfillRequested(now, out)
	out = s.preemptRequested(now, out)
	s.restoreAside()
	if s.holdForResources {
		s.reserve = max(s.reserve, s.freeN)
	}
	if s.cfg.Speculation == SpecHopperGRASS && s.queuedReq == 0 && !s.holdForResources {
		// No requested task waits: lend the slots Hopper keeps for
		// speculation to disclosed work rather than leave them idle. A
		// requested straggler takes one back by preempting (suspending)
		// a disclosed copy, so the loan costs the job nothing but a
		// SIGSTOP.
		s.reserve = 0
	}
	if s.freeN > s.reserve && s.suspended > 0 {
		out = s.resumeSuspended(now, out)
	}
	if s.freeN > s.reserve && !s.noDisc {
		out = s.decideDisclosed(now, out)
	}
	if s.freeN > s.reserve && s.cfg.Speculation == SpecHopperGRASS && s.jobs.n > 0 {
		out = s.extraSpeculation(now, out)
	}
	if s.freeN > s.reserve && !s.noDisc {
		out = s.speculateDisclosed(now, out)
	}
	s.fairEndDecide()
	return out
}

// Slot sources for obtainSlot.
const (
	slotFree          = iota // a free slot only
	slotFreeOrPreempt        // a free slot, else preempt disclosed work
	slotPreemptOnly          // preempt disclosed work (free slots are reserved)
)

// obtainSlot finds a slot for a new copy: the free slot of the worker with
// the most free slots, avoiding the workers in avoid when another has room;
// failing that, when preempt is set, the slot of the most recently started
// disclosed copy, suspended or killed.
func (s *Scheduler) obtainSlot(t *task, avoid []*worker, mode int, now Time, out *[]Decision) (*worker, int32, bool) {
	if !t.plain() {
		// Several slots or memory: a worker with room, else one that has
		// it once its disclosed copies are preempted (resource.go).
		var w *worker
		if mode != slotPreemptOnly {
			w = s.wheap.fit(avoid, t)
			if w == nil && len(avoid) > 0 {
				w = s.wheap.fit(nil, t)
			}
		}
		if w == nil && mode != slotFree && s.cfg.Preemption != PreemptOff && s.reqClass(t) {
			w = s.preemptFor(t, now, out)
		}
		if w == nil {
			return nil, 0, false
		}
		return w, w.freeSlots.pop(), true
	}
	if mode != slotPreemptOnly {
		w := s.bestFor(t, avoid)
		if w == nil && len(avoid) > 0 {
			w = s.bestFor(t, nil)
		}
		if w != nil {
			return w, w.freeSlots.pop(), true
		}
	}
	if mode == slotFree || s.cfg.Preemption == PreemptOff || len(s.preempt.items) == 0 {
		return nil, 0, false
	}
	c := s.preemptibleFor(t)
	if c == nil {
		return nil, 0, false
	}
	w := c.worker
	s.preemptCopy(c, now, out)
	return w, w.freeSlots.pop(), true
}

// startCopy runs a new copy of t on slot of w.
func (s *Scheduler) startCopy(t *task, w *worker, slot int32, spec bool, reason string, now Time, out *[]Decision) *liveCopy {
	c := &liveCopy{id: s.nextCopy, task: t, spec: spec, ppos: -1, progress: -1, started: now + s.lag.value} // run time from the copy's estimated start on its worker (lag.go)
	s.nextCopy++
	w.memUsed += int64(t.memMB)
	w.gpuUsed += int32(t.gpus)
	s.dequeue(t)
	t.copies = append(t.copies, c)
	s.copies[c.id] = c
	s.takeSlot(c, w, slot)
	if spec {
		s.specLive++
		s.specStarted++
	}
	*out = append(*out, Decision{Kind: DecisionStart, Copy: c.id, Task: t.ref(), Slot: SlotRef{Worker: w.id, Slot: slot}, Speculative: spec, Reason: reason})
	return c
}

// resumeCopy puts suspended copy c back on a free slot of its worker.
func (s *Scheduler) resumeCopy(c *liveCopy, now Time, reason string, out *[]Decision) {
	w := c.worker
	slot := w.freeSlots.pop()
	removeCopy(&w.suspended, c)
	s.suspended--
	c.task.set.nsusp--
	c.started = now
	s.takeSlot(c, w, slot)
	s.dequeue(c.task)
	*out = append(*out, Decision{Kind: DecisionResume, Copy: c.id, Task: c.task.ref(), Slot: SlotRef{Worker: w.id, Slot: slot}, Speculative: c.spec, Reason: reason})
}

// startQueued runs queued task t of the requested class: it resumes a
// suspended copy of t when that copy's worker has room, otherwise it starts
// a new copy (preempting disclosed work when allowed) and kills the
// suspended ones. It reports false when no slot could be had.
func (s *Scheduler) startQueued(t *task, reason string, mode int, now Time, out *[]Decision) bool {
	for _, c := range t.copies {
		// Its memory is still its own: room for its slots will do.
		if mode != slotPreemptOnly && c.state == cSuspended && c.worker.free() >= t.slots() {
			s.resumeCopy(c, now, "resume", out)
			s.killSuspended(t, out)
			return true
		}
	}
	w, slot, ok := s.obtainSlot(t, nil, mode, now, out)
	if !ok {
		s.blockedOnResources(t)
		return false
	}
	s.killSuspended(t, out)
	s.startCopy(t, w, slot, false, reason, now, out)
	return true
}

// killSuspended kills the suspended copies of t (a running copy replaced
// them).
func (s *Scheduler) killSuspended(t *task, out *[]Decision) {
	for i := 0; i < len(t.copies); {
		c := t.copies[i]
		if c.state != cSuspended {
			i++
			continue
		}
		*out = append(*out, Decision{Kind: DecisionKill, Copy: c.id, Task: t.ref(), Slot: SlotRef{Worker: c.worker.id, Slot: c.slot}, Speculative: c.spec, Reason: "replaced"})
		s.endCopy(c)
	}
}

// slotsLeft reports whether a requested start could still get a slot.
func (s *Scheduler) slotsLeft(preempt bool) bool {
	return s.freeN > 0 || (preempt && s.cfg.Preemption != PreemptOff && len(s.preempt.items) > 0)
}

// decideRequested hands slots to the requested class.
func (s *Scheduler) decideRequested(now Time, out []Decision) []Decision {
	if s.jobs.n == 0 {
		return out
	}
	switch s.cfg.Speculation {
	case SpecHopperGRASS:
		return s.hopper(now, out)
	default:
		return s.greedy(now, out)
	}
}

// greedy serves jobs in order, each taking every slot it wants: its queued
// tasks, then (best-effort-late, budgeted) speculative copies by LATE's
// rule on whatever is still free; with SpecGRASS, GRASS chooses inside
// each job between its queued tasks and speculative copies.
func (s *Scheduler) greedy(now Time, out []Decision) []Decision {
	spec := s.cfg.Speculation == SpecBestEffortLATE || s.cfg.Speculation == SpecBudgeted
	budget := s.cfg.Speculation == SpecBudgeted
	if s.taskKeys {
		out = s.startTasksInOrder(now, out)
	}
	it := &s.jit
	it.start(s.jobs.root)
	if s.cfg.Speculation == SpecGRASS {
		for st := it.next(); st != nil && s.slotsLeft(true); st = it.next() {
			// Best effort: the job may take every slot it can get now,
			// which is also its allocation for GRASS's wave count.
			avail := st.held + s.freeN
			if s.cfg.Preemption != PreemptOff {
				avail += len(s.preempt.items)
			}
			out = s.fillJob(st, avail, now, out)
		}
		return out
	}
	for st := it.next(); st != nil && s.slotsLeft(true); st = it.next() {
		for st.rq.len() > 0 && s.slotsLeft(true) && !s.capped(st) && !s.fairCapped(st) {
			if budget && s.running-s.specLive >= s.slots-s.cfg.Budget {
				break
			}
			if t := st.rq.peek(); !s.startQueued(t, "requested", slotFreeOrPreempt, now, &out) {
				if t.plain() || (t.routed() && t.routeOnly()) {
					break
				}
				s.setAside(t)
			}
		}
		if s.cfg.Speculation == SpecClone && st.rq.len() == 0 {
			out = s.cloneJob(st, now, out)
			continue
		}
		if !spec || s.freeN == 0 || len(st.running) == 0 {
			continue
		}
		if budget && s.specLive >= s.cfg.Budget {
			continue
		}
		if s.lateCapped() {
			continue
		}
		s.specCands = s.candidates(st, true, false, 2, now, s.specCands)
		cands := s.slowTasks(st, now, s.specCands)
		for _, cd := range cands {
			if s.freeN == 0 || (budget && s.specLive >= s.cfg.Budget) || s.capped(st) || s.fairCapped(st) || s.lateCapped() {
				break
			}
			s.speculate(cd.t, "speculate-late", slotFree, now, &out)
		}
	}
	return out
}
