package sched

import (
	"math"
	"slices"
)

// This file holds two SRPT variants of the requested class that Petrou
// §3.3 describes and the zero Config leaves out:
//
//   - Config.PreemptRequested makes SRPT preemptive: when a requested task
//     is queued, no slot is free, and a running requested copy has more
//     work left than the queued task needs (in a job served after the
//     queued task's job), that copy is suspended and the queued task takes
//     its slot. The suspended copy resumes later on its own worker, as soon
//     as no queued requested task would preempt it again.
//   - PolicyBatchSRPTTask is batch-srpt ordered by task, not by set: the
//     next slot goes to the queued task with the smallest estimate across
//     every set, which is the per-task SRPT of Petrou's batch baseline.
//
// Both keep decide.go's pipeline: Decide calls resumeRequested before the
// requested class is served and preemptRequested after it, and greedy
// calls startTasksInOrder first under PolicyBatchSRPTTask.

// preemptsRequested reports whether Decide must look at the requested
// class even when no slot is free.
func (s *Scheduler) preemptsRequested() bool {
	return s.cfg.PreemptRequested && s.srpt && s.cfg.Preemption == PreemptSuspend && s.queuedReq > 0
}

// remaining is the work copy c of t has left at now by its estimate (its
// own, else the history's t_new): at least 0; ok is false when nothing is
// known of t's length.
func (s *Scheduler) remaining(c *liveCopy, now Time) (float64, bool) {
	tn, ok := s.tNew(c.task)
	if !ok {
		return 0, false
	}
	return math.Max(0, tn-c.runTime(now)), true
}

// victimOK reports whether c may be suspended for shorter requested work:
// the only live copy of a requested task, not speculative, running on a
// worker that can suspend.
func (s *Scheduler) victimOK(c *liveCopy) bool {
	t := c.task
	return c.state == cRunning && !c.spec && len(t.copies) == 1 && s.reqClass(t) && !t.done() && c.worker != nil && c.worker.canSuspend
}

// jobsInOrder returns the requested jobs in service order (scratch).
func (s *Scheduler) jobsInOrder() []*set {
	jobs := s.scratch[:0]
	it := &s.jit
	it.start(s.jobs.root)
	for st := it.next(); st != nil; st = it.next() {
		jobs = append(jobs, st)
	}
	s.scratch = jobs
	return jobs
}

// beats reports whether a queued task of job q with work need should take
// the slot of copy c (remaining work rem) of job v: by job order (set SRPT)
// the queued task's job comes first, or (task SRPT) any job; and the queued
// task needs less than c has left.
func (s *Scheduler) beats(q *set, need float64, v *set, rem float64) bool {
	if !s.taskKeys && !jobBefore(q, v) {
		return false
	}
	return need < rem
}

// preemptRequested suspends running requested copies with the most work
// left for queued requested tasks that need less, queued jobs in service
// order, while any such pair exists.
//
// Victims are looked for only among the jobs that hold slots (at most one
// per busy slot), kept in service order: walking every later job for each
// queued job made each Decide quadratic in the jobs, and a burst that left
// thousands of requested sets queued behind busy slots slowed every write
// after it, since each one runs Decide.
func (s *Scheduler) preemptRequested(now Time, out []Decision) []Decision {
	if !s.preemptsRequested() {
		return out
	}
	jobs := s.jobsInOrder()
	// holders: the positions in jobs of the jobs that hold slots, in order.
	holders := s.holderBuf[:0]
	for i, v := range jobs {
		if v.held > 0 {
			holders = append(holders, i)
		}
	}
	for i, q := range jobs {
		if len(holders) == 0 || (!s.taskKeys && holders[len(holders)-1] <= i) {
			break // no job left that a queued task of q or a later job may take from
		}
		for q.rq.len() > 0 {
			t := q.rq.peek()
			need, ok := s.tNew(t)
			if !ok {
				break
			}
			from := i + 1
			if s.taskKeys {
				from = 0
			}
			var victim *liveCopy
			best := need
			for _, j := range holders {
				s.victimScans++
				v := jobs[j]
				if j < from || v.held == 0 || !s.fairVictimOK(q, v) {
					continue
				}
				for _, rt := range v.running {
					for _, c := range rt.copies {
						if !s.victimOK(c) || !c.worker.routes(t) { // its slot must be on t's route (route.go)
							continue
						}
						if rem, ok := s.remaining(c, now); ok && rem > best && s.beats(q, need, v, rem) {
							victim, best = c, rem
						}
					}
				}
			}
			if victim == nil {
				break
			}
			s.preemptCopy(victim, now, &out)
			if !s.startQueued(t, "requested", slotFree, now, &out) {
				s.holderBuf = holders[:0]
				s.scratch = jobs[:0]
				return out
			}
			// q holds a slot now: with per-task keys its copy may be a
			// victim for a later queued task.
			if k, found := slices.BinarySearch(holders, i); !found {
				holders = slices.Insert(holders, k, i)
			}
		}
	}
	s.holderBuf = holders[:0]
	s.scratch = jobs[:0]
	return out
}

// resumeRequested resumes suspended requested copies on free slots of their
// own workers, least work left first, unless a queued requested task would
// preempt them again at once (beats).
func (s *Scheduler) resumeRequested(now Time, out []Decision) []Decision {
	if !s.cfg.PreemptRequested || !s.srpt || s.suspended == 0 || s.freeN == 0 {
		return out
	}
	type cand struct {
		c   *liveCopy
		rem float64
	}
	var cs []cand
	for _, w := range s.wheap.items {
		if w.free() == 0 {
			continue
		}
		for _, c := range w.suspended {
			if s.reqClass(c.task) && !c.task.done() {
				rem, _ := s.remaining(c, now)
				cs = append(cs, cand{c, rem})
			}
		}
	}
	if len(cs) == 0 {
		return out
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.rem != b.rem {
			if a.rem < b.rem {
				return -1
			}
			return 1
		}
		return cmpCopyID(a.c.id, b.c.id)
	})
	var jobs []*set
	if s.queuedReq > 0 {
		jobs = s.jobsInOrder()
	}
	for _, cd := range cs {
		c := cd.c
		if c.worker.free() == 0 {
			continue
		}
		blocked := false
		for _, q := range jobs {
			if !s.taskKeys && !jobBefore(q, c.task.set) {
				break
			}
			if q.rq.len() == 0 {
				continue
			}
			if need, ok := s.tNew(q.rq.peek()); ok && s.beats(q, need, c.task.set, cd.rem) {
				blocked = true
				break
			}
		}
		if !blocked && !s.fairCapped(c.task.set) {
			s.resumeCopy(c, now, "resume", &out)
		}
	}
	if jobs != nil {
		s.scratch = jobs[:0]
	}
	return out
}

// markKey records that the per-task key of job st may have changed (its
// queue changed); flushKeys rekeys such jobs. Rekeying is deferred so that
// no job moves in the tree while Decide walks it.
func (s *Scheduler) markKey(st *set) {
	if !s.taskKeys || st.keyDirty {
		return
	}
	st.keyDirty = true
	s.dirtyKeys = append(s.dirtyKeys, st)
}

func (s *Scheduler) flushKeys() {
	for _, st := range s.dirtyKeys {
		st.keyDirty = false
		if st.inTree {
			s.jobs.rekey(st, s.jobKey(st))
			s.updateUnder(st)
		}
	}
	clear(s.dirtyKeys)
	s.dirtyKeys = s.dirtyKeys[:0]
}

// taskKey is a job's key under PolicyBatchSRPTTask: the work of its
// smallest queued task; a job with nothing queued comes last.
func taskKey(st *set) float64 {
	if t := st.rq.peek(); t != nil {
		return taskWork(t)
	}
	return math.Inf(1)
}

// firstJob is the job first in service order, or nil.
func (s *Scheduler) firstJob() *set {
	n := s.jobs.root
	for n != nil && n.jleft != nil {
		n = n.jleft
	}
	return n
}

// startTasksInOrder starts queued requested tasks smallest first across
// every job (PolicyBatchSRPTTask), while slots last.
func (s *Scheduler) startTasksInOrder(now Time, out []Decision) []Decision {
	budget := s.cfg.Speculation == SpecBudgeted
	for s.slotsLeft(true) {
		if budget && s.running-s.specLive >= s.slots-s.cfg.Budget {
			break
		}
		s.flushKeys()
		st := s.firstJob()
		if st == nil || st.rq.len() == 0 {
			break
		}
		if !s.startQueued(st.rq.peek(), "requested", slotFreeOrPreempt, now, &out) {
			break
		}
	}
	s.flushKeys()
	return out
}
