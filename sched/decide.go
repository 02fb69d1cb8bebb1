package sched

import (
	"math"
	"slices"
)

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
	out := s.pending
	s.pending = nil
	s.flushKeys()
	canPreempt := s.cfg.Preemption != PreemptOff && len(s.preempt.items) > 0
	if s.freeN == 0 && (!canPreempt || s.jobs.n == 0) && !s.preemptsRequested() {
		return out
	}
	s.reserve = 0
	s.holdForResources = false
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
	return out
}

// Slot sources for obtainSlot.
const (
	slotFree          = iota // a free slot only
	slotFreeOrPreempt        // a free slot, else preempt disclosed work
	slotPreemptOnly          // preempt disclosed work (free slots are reserved)
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
		for st.rq.len() > 0 && !s.capped(st) {
			mode := slotFree
			if s.freeN <= s.reserve {
				if !preempt || len(s.preempt.items) == 0 {
					return out
				}
				mode = slotPreemptOnly
			}
			if t := st.rq.peek(); !s.startQueued(t, "requested", mode, now, &out) {
				if t.plain() {
					return out
				}
				s.setAside(t) // no room for its resources: the next may fit
			}
		}
	}
	return out
}

// extraSpeculation hands the slots left after every queued task started to
// requested jobs' stragglers (Hopper's Guideline 3: spare capacity goes to
// speculation), GS's rule, in job order.
func (s *Scheduler) extraSpeculation(now Time, out []Decision) []Decision {
	it := &s.jit
	it.start(s.jobs.root)
	for st := it.next(); st != nil && s.freeN > s.reserve; st = it.next() {
		if len(st.running) == 0 {
			continue
		}
		// Beyond a job's share, copies stay within GRASS's early bound:
		// a task whose copies all hang does not get the whole cluster.
		maxCopies := s.cfg.MaxEarlyCopies
		if st.rq.len() == 0 {
			maxCopies = math.MaxInt32
		}
		s.specCands = s.candidates(st, true, false, maxCopies, now, s.specCands)
		for _, cd := range s.specCands {
			if s.freeN <= s.reserve || s.capped(st) {
				break
			}
			s.speculate(cd.t, "speculate-gs", slotFree, now, &out)
		}
	}
	return out
}

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
		w := s.wheap.best(avoid)
		if w == nil && len(avoid) > 0 {
			w = s.wheap.best(nil)
		}
		if w != nil {
			return w, w.freeSlots.pop(), true
		}
	}
	if mode == slotFree || s.cfg.Preemption == PreemptOff || len(s.preempt.items) == 0 {
		return nil, 0, false
	}
	c := s.preempt.peek()
	w := c.worker
	s.preemptCopy(c, now, out)
	return w, w.freeSlots.pop(), true
}

// preemptCopy suspends c (or kills it, where suspension is off or the
// worker cannot suspend) to free its slot for requested work.
func (s *Scheduler) preemptCopy(c *liveCopy, now Time, out *[]Decision) {
	w := c.worker
	d := Decision{Copy: c.id, Task: c.task.ref(), Slot: SlotRef{Worker: w.id, Slot: c.slot}, Speculative: c.spec, Reason: "preempted"}
	if s.cfg.Preemption == PreemptSuspend && w.canSuspend {
		d.Kind = DecisionSuspend
		run := c.runTime(now)
		s.freeSlot(c)
		c.state = cSuspended
		c.runSoFar = run
		w.suspended = append(w.suspended, c)
		s.suspended++
		c.task.set.nsusp++
	} else {
		d.Kind = DecisionKill
		t := c.task
		s.endCopy(c)
		if len(t.copies) == 0 {
			s.enqueue(t)
		}
	}
	*out = append(*out, d)
}

// startCopy runs a new copy of t on slot of w.
func (s *Scheduler) startCopy(t *task, w *worker, slot int32, spec bool, reason string, now Time, out *[]Decision) *liveCopy {
	c := &liveCopy{id: s.nextCopy, task: t, spec: spec, ppos: -1, progress: -1, started: now + s.lag.value} // run time from the copy's estimated start on its worker (lag.go)
	s.nextCopy++
	w.memUsed += int64(t.memMB)
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

// specCand is a running task that may get a speculative copy.
type specCand struct {
	t     *task
	score float64 // GS/LATE: t_rem; RAS: resource saving
	trem  float64
}

// candidates lists the running tasks of st (in class req) that qualify for
// a speculative copy at now, best first. ras selects GRASS's RAS rule
// (c·t_rem − (c+1)·t_new > 0, by saving) over GS/LATE's (t_rem > t_new, by
// t_rem); maxCopies bounds the live copies of a task.
func (s *Scheduler) candidates(st *set, req bool, ras bool, maxCopies int, now Time, buf []specCand) []specCand {
	buf = buf[:0]
	key := maxCopies * 4
	if req {
		key++
	}
	if ras {
		key += 2
	}
	sc := st.cacheFor(key, s.beta.epoch)
	if now < sc.at && sc.fallback > 0 && st.durN == 0 {
		// The scan relied on other sets' history for t_new; it still
		// holds if that t_new did not fall (a larger t_new only makes a
		// copy qualify later).
		if tn, ok := s.historyTNew(st); !ok || tn < sc.fallback {
			sc.at = math.Inf(-1)
		}
	}
	if now < sc.at {
		return buf
	}
	// next is the earliest time a task that does not qualify now will,
	// if nothing else happens; events lower it (touch).
	next := math.Inf(1)
	noCache := false
	fallback := 0.0
	// t_new of the set's tasks without an estimate and β are the same for
	// every task of the scan: look them up once.
	setTN, setOK := 0.0, false
	setDone := false
	beta := s.beta.value()
	for _, t := range st.running {
		if t.noSpec || s.reqClass(t) != req || t.done() || len(t.copies) >= maxCopies {
			continue
		}
		var tn float64
		var ok bool
		if t.est > 0 {
			tn, ok = t.est, true
		} else {
			if !setDone {
				setTN, setOK = s.tNew(t)
				setDone = true
			}
			tn, ok = setTN, setOK
		}
		if t.est == 0 && st.durN == 0 {
			// t_new comes from other sets' history, which changes
			// without touching this set: the cache remembers the value
			// and holds while it does not fall; unknown: do not cache.
			if ok {
				fallback = tn
			} else {
				noCache = true
			}
		}
		if !ok {
			continue
		}
		if t.deadline > 0 {
			// GRASS's pruning for deadline-bound work: a copy that cannot
			// finish before the deadline is not worth a slot.
			ref := st.disclosedAt
			if t.state == stRequested {
				ref = t.requestedAt
			}
			if now+tn > ref+t.deadline {
				continue
			}
		}
		trem := math.Inf(1)
		nrun := 0
		oldest := 0.0
		for _, c := range t.copies {
			if c.state != cRunning {
				continue
			}
			nrun++
			run := c.runTime(now)
			trem = min(trem, TRem(run, c.progress, beta, tn))
			oldest = max(oldest, run)
		}
		if nrun == 0 {
			continue
		}
		// need: t_rem must exceed need·t_new (GS/LATE: 1; RAS: (c+1)/c).
		need := 1.0
		if ras {
			need = float64(nrun+1) / float64(nrun)
		}
		if oldest >= s.stragglerAfter() && trem > need*(tn+s.lag.value) { // a new copy pays the driver's latency too (lag.go)
			score := trem
			if ras {
				score = float64(nrun)*trem - float64(nrun+1)*tn
			}
			buf = append(buf, specCand{t: t, score: score, trem: trem})
			continue
		}
		if len(buf) == 0 {
			// next matters only while no task qualifies (see below).
			next = min(next, s.qualifiesAt(t, need, tn+s.lag.value))
		}
	}
	if len(buf) == 0 && !noCache {
		sc.at = next
		sc.fallback = fallback
	} else {
		sc.at = math.Inf(-1)
	}
	slices.SortFunc(buf, func(a, b specCand) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.t.index) - int(b.t.index)
	})
	return buf
}

// specCache is one cached speculation scan of a set (see set.spec).
type specCache struct {
	key   int
	epoch int
	at    Time
	// fallback is the t_new from other sets' history the scan assumed
	// (0: none); see candidates.
	fallback float64
	used     uint64 // Decide-independent use counter, for replacing the older
}

// cacheFor returns the cache entry of rule key, taking over the least
// recently used one (reset) when key has none or β was refitted.
func (st *set) cacheFor(key, epoch int) *specCache {
	a, b := &st.spec[0], &st.spec[1]
	n := max(a.used, b.used) + 1
	for _, c := range []*specCache{a, b} {
		if c.used > 0 && c.key == key {
			if c.epoch != epoch {
				c.epoch, c.at = epoch, math.Inf(-1)
			}
			c.used = n
			return c
		}
	}
	c := a
	if b.used < a.used {
		c = b
	}
	*c = specCache{key: key, epoch: epoch, at: math.Inf(-1), used: n}
	return c
}

// touch records that something about t changed (a copy started, ended,
// was suspended or reported progress; t changed class): t may qualify for
// a speculative copy earlier than the set's cached scans assumed, at the
// earliest under the loosest rule (t_rem > t_new).
func (s *Scheduler) touch(t *task) {
	st := t.set
	if st.spec[0].used == 0 && st.spec[1].used == 0 {
		return
	}
	at := math.Inf(-1)
	if tn, ok := s.tNew(t); ok && !t.noSpec && !t.done() {
		at = s.qualifiesAt(t, 1, tn+s.lag.value)
	} else if t.noSpec || t.done() {
		return
	}
	for i := range st.spec {
		st.spec[i].at = min(st.spec[i].at, at)
	}
}

// qualifiesAt is when the running copies of t will all have t_rem above
// need·tn (and one has run StragglerAfter), if nothing else happens: for a
// copy with progress p after run time ω, ω(1−p)/p grows with ω and passes
// need·tn at ω = need·tn·p/(1−p); without a report the Pareto tail
// ω/(β−1) passes it at ω = (β−1)·need·tn. +Inf when t has no running copy.
func (s *Scheduler) qualifiesAt(t *task, need, tn float64) Time {
	beta := s.beta.value()
	at := math.Inf(-1)
	straggler := math.Inf(1)
	n := 0
	for _, c := range t.copies {
		if c.state != cRunning {
			continue
		}
		n++
		var omega float64
		if p := c.progress; p > 0 && p <= 1 {
			if p >= 1 {
				return math.Inf(1)
			}
			omega = need * tn * p / (1 - p)
		} else {
			omega = (beta - 1) * need * tn
		}
		at = max(at, c.started+omega-c.runSoFar)
		straggler = min(straggler, c.started+s.stragglerAfter()-c.runSoFar)
	}
	if n == 0 {
		return math.Inf(1)
	}
	return max(at, straggler)
}

// speculate starts a speculative copy of t, preferring a worker that does
// not run t already.
func (s *Scheduler) speculate(t *task, reason string, mode int, now Time, out *[]Decision) bool {
	avoid := make([]*worker, 0, len(t.copies))
	for _, c := range t.copies {
		avoid = append(avoid, c.worker)
	}
	w, slot, ok := s.obtainSlot(t, avoid, mode, now, out)
	if !ok {
		return false
	}
	s.startCopy(t, w, slot, true, reason, now, out)
	return true
}

// slotsLeft reports whether a requested start could still get a slot.
func (s *Scheduler) slotsLeft(preempt bool) bool {
	return s.freeN > 0 || (preempt && s.cfg.Preemption != PreemptOff && len(s.preempt.items) > 0)
}

// holdShare is how many of the n slots of job st's Hopper share that it
// could not use stay free for it (the rest are work-conserving: queued
// requested tasks of later jobs take them, Hopper §5 Pseudocode 3, where a
// job refuses a slot it cannot use and the slot goes to the smallest job
// with unscheduled tasks). A share is held only while a copy of the job is
// younger than StragglerAfter, the detection delay: its straggling cannot
// be seen yet, and Hopper §3 Fig. 2 keeps A's fifth slot free for exactly
// that long. With StragglerAfter 0, no slot is held idle while requested
// work is queued.
func (s *Scheduler) holdShare(st *set, n int, now Time) int {
	if n <= 0 || s.capped(st) || now >= st.lastStart+s.cfg.StragglerAfter {
		return 0
	}
	return n
}

// virtualFactor is Hopper's max(2/β, 1), or Config.VirtualFactor.
func (s *Scheduler) virtualFactor() float64 {
	if s.cfg.VirtualFactor > 0 {
		return s.cfg.VirtualFactor
	}
	return max(2/s.beta.value(), 1)
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
		for st.rq.len() > 0 && s.slotsLeft(true) && !s.capped(st) {
			if budget && s.running-s.specLive >= s.slots-s.cfg.Budget {
				break
			}
			if t := st.rq.peek(); !s.startQueued(t, "requested", slotFreeOrPreempt, now, &out) {
				if t.plain() {
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
			if s.freeN == 0 || (budget && s.specLive >= s.cfg.Budget) || s.capped(st) || s.lateCapped() {
				break
			}
			s.speculate(cd.t, "speculate-late", slotFree, now, &out)
		}
	}
	return out
}

// cloneJob (SpecClone) gives the free slots to extra copies of st's
// running requested tasks, the task with the fewest live copies first
// (then by index), round by round, while slots are free.
func (s *Scheduler) cloneJob(st *set, now Time, out []Decision) []Decision {
	ts := make([]*task, 0, len(st.running))
	for _, t := range st.running {
		if !t.noSpec && s.reqClass(t) && !t.done() && len(t.copies) > 0 {
			ts = append(ts, t)
		}
	}
	for s.freeN > 0 && len(ts) > 0 && !s.capped(st) {
		slices.SortFunc(ts, func(a, b *task) int {
			if len(a.copies) != len(b.copies) {
				return len(a.copies) - len(b.copies)
			}
			return int(a.index) - int(b.index)
		})
		n := len(ts[0].copies)
		for _, t := range ts {
			if len(t.copies) > n || s.freeN == 0 || s.capped(st) {
				break
			}
			if !s.speculate(t, "clone", slotFree, now, &out) {
				return out
			}
		}
	}
	return out
}

// lateCapped reports whether best-effort-late's speculative cap
// (Config.SpecCap, a fraction of the slots) is reached.
func (s *Scheduler) lateCapped() bool {
	if s.cfg.SpecCap <= 0 || s.cfg.Speculation != SpecBestEffortLATE {
		return false
	}
	return s.specLive >= int(math.Ceil(s.cfg.SpecCap*float64(s.slots)-1e-9))
}

// slowTasks keeps, with Config.SlowTaskQuantile q under best-effort-late,
// the candidates whose progress rate is at or below the q-quantile of the
// rates of st's running requested tasks that reported progress (LATE's
// SlowTaskThreshold). A task's rate is its best running copy's progress ÷
// run time; a task without a report is not slow. cands is filtered in
// place.
func (s *Scheduler) slowTasks(st *set, now Time, cands []specCand) []specCand {
	q := s.cfg.SlowTaskQuantile
	if q <= 0 || s.cfg.Speculation != SpecBestEffortLATE || len(cands) == 0 {
		return cands
	}
	rate := func(t *task) (float64, bool) {
		best, ok := 0.0, false
		for _, c := range t.copies {
			if c.state != cRunning || c.progress <= 0 {
				continue
			}
			if run := c.runTime(now); run > 0 {
				best, ok = max(best, c.progress/run), true
			}
		}
		return best, ok
	}
	rates := s.rateBuf[:0]
	for _, t := range st.running {
		if s.reqClass(t) && !t.done() {
			if r, ok := rate(t); ok {
				rates = append(rates, r)
			}
		}
	}
	s.rateBuf = rates
	if len(rates) == 0 {
		return cands[:0]
	}
	slices.Sort(rates)
	thr := rates[min(len(rates)-1, int(math.Floor(q*float64(len(rates)-1)+1e-9)))]
	out := cands[:0]
	for _, cd := range cands {
		if r, ok := rate(cd.t); ok && r <= thr {
			out = append(out, cd)
		}
	}
	return out
}

// hopper splits the slots between the requested jobs by Hopper's
// Pseudocode 1 with ε-fairness (§4.3) and fills each job's share by GRASS.
func (s *Scheduler) hopper(now Time, out []Decision) []Decision {
	S := s.slots
	n := s.jobs.n
	if S <= 0 {
		return out
	}
	c := s.virtualFactor()
	fair := 0
	if s.epsilon < 1 {
		fair = int(math.Floor((1 - s.epsilon) * float64(S) / float64(n)))
	}
	sumV := c * float64(s.reqUnfin)
	if float64(S) < sumV && fair > 0 && fair <= floorCap && !s.fullAlloc {
		return s.hopperFloor(fair, c, now, out)
	}
	if fair == 0 && float64(S) < sumV {
		// Slots are short and no fairness floor binds: smallest V first,
		// each up to V; walk only as far as slots last.
		left := S
		var carry shareCarry
		it := &s.jit
		it.start(s.jobs.root)
		for st := it.next(); st != nil && left+carry.n > 0 && s.slotsLeft(true); st = it.next() {
			d := desired(c, st.unfin)
			share := min(left, d)
			left -= share
			out = s.fillShare(st, share, d, &carry, now, out)
		}
		return out
	}
	// Few enough jobs that every one is looked at: compute the whole
	// allocation, then fill.
	jobs := s.scratch[:0]
	it := &s.jit
	it.start(s.jobs.root)
	for st := it.next(); st != nil; st = it.next() {
		jobs = append(jobs, st)
	}
	s.scratch = jobs
	alloc := HopperAllocate(S, c, s.epsilon, len(jobs), func(i int) int { return jobs[i].unfin }, s.alloc[:0])
	s.alloc = alloc
	var carry shareCarry
	for i, st := range jobs {
		if !s.slotsLeft(true) {
			break
		}
		out = s.fillShare(st, alloc[i], desired(c, st.unfin), &carry, now, out)
	}
	return out
}

// fillShare fills job st up to its Hopper share plus carry.n, the part of
// earlier jobs' shares they could not use now (Hopper §5, Pseudocode 2–3:
// a job refuses a slot it cannot use, and the slot goes to the next job in
// order); with Guideline 2 the job takes no more than its desired
// allocation ⌈V⌉ (capV) unless its share is larger. It leaves in carry what
// of share + carry.n the job neither took nor holds for its detection
// delay (holdShare), for the next job.
func (s *Scheduler) fillShare(st *set, share, capV int, carry *shareCarry, now Time, out []Decision) []Decision {
	target := share + carry.n
	if capV > share {
		target = min(target, capV)
	} else {
		target = min(target, share)
	}
	hold := 0
	if target > st.held {
		out = s.fillJob(st, target, now, out)
		hold = s.holdShare(st, target-st.held, now)
		s.reserve += hold
	}
	carry.pass(max(0, share+carry.n-st.held-hold))
	return out
}

// carryScan bounds how far an unused share travels: after this many jobs
// in a row took none of it, the rest is left to step 3 (queued tasks), so
// that slots nobody can use now do not make every Decide visit every job.
const carryScan = 64

// shareCarry is the unused share passed from job to job (n), and how many
// jobs in a row took none of it (idle).
type shareCarry struct{ n, idle int }

// pass sets the carry for the next job to left, what the job offered c.n
// left of it and of its own share; it drops the carry after carryScan jobs
// in a row that took none.
func (c *shareCarry) pass(left int) {
	if c.n == 0 || left < c.n {
		c.idle, c.n = 0, left
		return
	}
	if c.idle++; c.idle >= carryScan {
		c.n = 0
		return
	}
	c.n = left
}

// hopperFloor is the allocation of hopper's last branch when slots are
// short and a fairness floor 1 ≤ fair ≤ floorCap binds, without visiting
// every job: Σ floors comes from the counts of jobs by remaining tasks, the
// walk visits the jobs that get more than their floor (a prefix in job
// order), and the jobs below their floor are kept in s.under. It fills the
// same jobs in the same order as HopperAllocate would.
func (s *Scheduler) hopperFloor(fair int, c float64, now Time, out []Decision) []Decision {
	if fair != s.underFair {
		s.underFair = fair
		it := &s.jit
		it.start(s.jobs.root)
		for st := it.next(); st != nil; st = it.next() {
			s.updateUnder(st)
		}
	}
	sumBase, small := 0, 0
	for t := 1; t < fair; t++ {
		sumBase += t * s.tcount[t]
		small += s.tcount[t]
	}
	sumBase += fair * (s.jobs.n - small)
	left := max(s.slots-sumBase, 0)
	visited := s.scratch[:0]
	it := &s.jit
	it.start(s.jobs.root)
	stop := false
	var carry shareCarry
	for st := it.next(); st != nil && left+carry.n > 0 && !stop; st = it.next() {
		st.visited = true
		visited = append(visited, st)
		base := min(fair, st.unfin)
		d := desired(c, st.unfin)
		extra := min(left, max(0, d-base))
		left -= extra
		out = s.fillShare(st, base+extra, d, &carry, now, out)
		stop = !s.slotsLeft(true)
	}
	if !stop && len(s.under) > 0 {
		rest := make([]*set, 0, len(s.under))
		for _, st := range s.under {
			if !st.visited {
				rest = append(rest, st)
			}
		}
		slices.SortFunc(rest, func(a, b *set) int {
			if jobBefore(a, b) {
				return -1
			}
			return 1
		})
		// Jobs before the last visited one were visited; the rest come
		// after the prefix in job order, as in HopperAllocate.
		for _, st := range rest {
			out = s.fillShare(st, min(fair, st.unfin), desired(c, st.unfin), &carry, now, out)
			if !s.slotsLeft(true) {
				break
			}
		}
	}
	for _, st := range visited {
		st.visited = false
	}
	s.scratch = visited[:0]
	return out
}

// desired is a job's desired allocation ⌈c·remaining⌉: the slots it
// accepts before it refuses more (Hopper §5, Pseudocode 2: a job takes a
// slot while its tasks are not all scheduled to the desired speculation
// level V). Pseudocode 1's ⌊V⌋ would give a job with one straggling task
// left (V = 2/β ≈ 1.6) no slot for its copy, starving exactly the small
// jobs Hopper means to speed up; the implementation allocates slots one at
// a time as they free, so the job below V gets the next one.
func desired(c float64, remaining int) int {
	return int(math.Ceil(c*float64(remaining) - 1e-9))
}

// HopperAllocate is Hopper's Pseudocode 1 with ε-fairness: it splits S
// slots between n jobs, given in the order jobs are served (ascending
// virtual size for SRPT), whose remaining task counts are remaining(i);
// c is max(2/β, 1), so V_i = c·remaining(i).
//
// Every job first gets its fairness floor b_i = min(⌊(1−ε)·S/n⌋, T_i)
// (§4.3; a job's floor never exceeds its remaining tasks: fairness guards
// against starvation and must not hand out idle reservations). Then:
//
//   - S < ΣV (Guideline 2, lines 4–5): in order, smallest V first, each
//     job is topped up to its desired allocation ⌈V_i⌉ (see desired:
//     rounded up, so that a one-task job keeps room for a copy) while
//     slots last.
//   - S ≥ ΣV (Guideline 3, line 7): every slot is shared in proportion to
//     V, ⌊V_i/ΣV·S⌋ (never below the floor: S ≥ ΣV makes it at least
//     ⌊V_i⌋ ≥ T_i), but at least ⌈V_i⌉. Spare slots are worth most as
//     speculation, and larger jobs have more stragglers. Where ⌈V_i⌉ lifts
//     a job one slot above its proportional part the total can pass S by
//     up to a slot a job; the jobs first in order then fill first, and the
//     fill stops when the slots run out.
//
// A share is an upper bound, not a reservation: fillJob takes only the
// slots the job can use now (queued tasks, stragglers worth a copy), and
// Decide lends the rest to disclosed work, which a requested straggler
// takes back by preemption. With no floor this is exactly Pseudocode 1.
// The result is appended to buf; it costs O(n) and allocates nothing when
// buf has room.
func HopperAllocate(S int, c, epsilon float64, n int, remaining func(i int) int, buf []int) []int {
	alloc := buf[:0]
	if n <= 0 || S <= 0 {
		for range max(n, 0) {
			alloc = append(alloc, 0)
		}
		return alloc
	}
	fair := 0
	if epsilon < 1 {
		fair = int(math.Floor((1 - max(epsilon, 0)) * float64(S) / float64(n)))
	}
	sumBase, sumT := 0, 0
	for i := range n {
		t := remaining(i)
		b := min(fair, t)
		sumBase += b
		sumT += t
		alloc = append(alloc, b)
	}
	if sumT > 0 && float64(S) >= c*float64(sumT) {
		// Guideline 3: V_i/ΣV = T_i/ΣT.
		for i := range n {
			t := remaining(i)
			alloc[i] = max(desired(c, t), int(math.Floor(float64(S)*float64(t)/float64(sumT))))
		}
		return alloc
	}
	left := max(S-sumBase, 0)
	for i := range n {
		if extra := min(left, desired(c, remaining(i))-alloc[i]); extra > 0 {
			alloc[i] += extra
			left -= extra
		}
	}
	return alloc
}

// fillJob gives job st slots up to target by GRASS: RAS while the job has
// more than two waves of queued tasks, GS in its last two (Config.Grass
// can fix either rule instead); speculative
// copies bounded by MaxEarlyCopies until no task of the job is queued.
func (s *Scheduler) fillJob(st *set, target int, now Time, out []Decision) []Decision {
	ras := s.cfg.Grass.useRAS(st.rq.len(), target)
	maxCopies := s.cfg.MaxEarlyCopies
	if st.rq.len() == 0 {
		maxCopies = math.MaxInt32
	}
	var cands []specCand
	if len(st.running) > 0 {
		s.specCands = s.candidates(st, true, ras, maxCopies, now, s.specCands)
		cands = s.specCands
	}
	ci := 0
	for st.held < target && s.slotsLeft(true) && !s.capped(st) {
		q := st.rq.peek()
		var cd *specCand
		if ci < len(cands) {
			cd = &cands[ci]
		}
		takeSpec := false
		switch {
		case cd == nil:
		case q == nil:
			takeSpec = true
		case ras:
			takeSpec = true // a positive saving beats starting a new task
		default:
			// GS over an exact job: the task with the highest t_rem, an
			// unstarted task counting its t_new.
			qt, ok := s.tNew(q)
			takeSpec = ok && cd.trem > qt
		}
		if takeSpec {
			ci++
			reason := "speculate-gs"
			if ras {
				reason = "speculate-ras"
			}
			if !s.speculate(cd.t, reason, slotFreeOrPreempt, now, &out) {
				break
			}
			continue
		}
		if q == nil {
			break
		}
		if !s.startQueued(q, "requested", slotFreeOrPreempt, now, &out) {
			if q.plain() {
				break
			}
			s.setAside(q)
		}
	}
	return out
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
			if w.free() < c.task.slots() {
				continue
			}
			if (s.noDisc && !s.reqClass(c.task)) || s.capped(c.task.set) {
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
			if t.plain() {
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
// holds the fewest running disclosed copies, ties broken FCFS (setBefore).
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
			hb, hs := held[best.owner], held[st.owner]
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
			if t.plain() {
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
