// Speculation: which running tasks qualify for a speculative copy (GRASS's
// GS and RAS rules, LATE's), the cached scans, and the copies that get one.

package sched

import (
	"math"
	"slices"
)

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
			maxCopies = s.lastWaveCopies(st)
		}
		s.specCands = s.candidates(st, true, false, maxCopies, now, s.specCands)
		for _, cd := range s.specCands {
			if s.freeN <= s.reserve || s.capped(st) || s.fairCapped(st) {
				break
			}
			s.speculate(cd.t, "speculate-gs", slotFree, now, &out)
		}
	}
	return out
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
		if t.noSpec || t.held || s.reqClass(t) != req || t.done() || len(t.copies) >= maxCopies {
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
		// t_new of a further copy: tn, or this task's own (grasstask.go).
		tnT := s.taskTNew(t, tn, beta, now)
		if oldest >= s.stragglerAfter() && trem > need*(tnT+s.lag.value) { // a new copy pays the driver's latency too (lag.go)
			score := trem
			if ras {
				score = float64(nrun)*trem - float64(nrun+1)*tnT
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
	if t.held {
		return false // a held task starts no copy (hold.go)
	}
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
	for s.freeN > 0 && len(ts) > 0 && !s.capped(st) && !s.fairCapped(st) {
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
