// State changes behind the events and decisions: the requested-class jobs,
// the queues, slots taken and freed, copies ended, task state moves, and the
// duration history.

package sched

import (
	"math"
)

// reqClass reports whether t belongs to the requested class (Hopper's jobs).
func (s *Scheduler) reqClass(t *task) bool {
	return !t.held && (t.state == stRequested || (s.oneQueue && t.state == stDisclosed))
}

func (s *Scheduler) taskLess(a, b *task) bool {
	if s.srpt && a.est != b.est {
		return a.est < b.est
	}
	return a.index < b.index
}

func discLess(a, b *task) bool { return a.index < b.index }

// task returns task i of the set, nil when the scheduler does not hold it.
func (st *set) task(i int32) *task {
	if i < st.lo || int64(i-st.lo) >= int64(len(st.tasks)) {
		return nil
	}
	return st.tasks[i-st.lo]
}

// forgetIfClosed drops set st once it holds no open task and no live
// copy: finished work costs the scheduler no memory, the same state a
// restart gives (store.LoadState reads open tasks only). Events about its
// final tasks are not sent (the store changes nothing for them); a later
// disclose into it makes it anew.
func (s *Scheduler) forgetIfClosed(st *set) {
	if st.open > 0 || st.nrun > 0 || st.nsusp > 0 || st.dpos >= 0 || st.inTree || st.upos >= 0 || st.keyDirty || len(st.running) > 0 {
		return
	}
	if s.sets[st.id] == st {
		delete(s.sets, st.id)
	}
}

func (s *Scheduler) newSet(id SetID, owner string, at Time) *set {
	st := &set{id: id, owner: owner, disclosedAt: at, dpos: -1, upos: -1}
	st.dq.less, st.dq.at = discLess, taskPos
	st.rq.less, st.rq.at = s.taskLess, taskPos
	s.sets[id] = st
	return st
}

func taskWork(t *task) float64 {
	if t.est > 0 {
		return t.est
	}
	return 1
}

// jobKey is the order of jobs in the requested class.
func (s *Scheduler) jobKey(st *set) float64 {
	if s.taskKeys {
		return taskKey(st)
	}
	if s.srpt {
		return st.work
	}
	return st.arrival
}

// joinJob counts t in its set's requested-class job.
func (s *Scheduler) joinJob(t *task, now Time) {
	st := t.set
	if st.unfin == 0 {
		st.arrival = now
	}
	s.countJob(st, -1)
	st.unfin += t.slots()
	s.countJob(st, 1)
	s.reqUnfin += t.slots()
	st.work += taskWork(t)
	for _, c := range t.copies {
		if c.state == cRunning {
			st.held += c.slots()
		}
	}
	s.rekeyJob(st)
}

// leaveJob removes t from its set's requested-class job.
func (s *Scheduler) leaveJob(t *task) {
	st := t.set
	s.countJob(st, -1)
	st.unfin -= t.slots()
	s.countJob(st, 1)
	s.reqUnfin -= t.slots()
	st.work -= taskWork(t)
	if st.unfin == 0 {
		st.work = 0
	}
	for _, c := range t.copies {
		if c.state == cRunning {
			st.held -= c.slots()
		}
	}
	s.rekeyJob(st)
}

func (s *Scheduler) rekeyJob(st *set) {
	defer s.updateUnder(st)
	if st.unfin == 0 {
		s.jobs.remove(st)
		return
	}
	k := s.jobKey(st)
	if !st.inTree {
		st.jkey = k
		s.jobs.insert(st)
		return
	}
	s.jobs.rekey(st, k)
}

// floorCap bounds the fairness floors counted incrementally: a larger
// floor means fewer than (1−ε)·slots/floorCap jobs, cheap to visit.
const floorCap = 64

// countJob adds d to the count of jobs with st's remaining task count.
func (s *Scheduler) countJob(st *set, d int) {
	if st.unfin > 0 {
		s.tcount[min(st.unfin, floorCap)] += d
	}
}

// updateUnder keeps st's membership of s.under: a job with queued tasks
// holding fewer slots than its floor min(underFair, remaining tasks).
func (s *Scheduler) updateUnder(st *set) {
	s.fairSync(st)
	want := s.underFair > 0 && st.inTree && st.rq.len() > 0 && st.held < min(s.underFair, st.unfin)
	if want == (st.upos >= 0) {
		return
	}
	if want {
		st.upos = len(s.under)
		s.under = append(s.under, st)
		return
	}
	i, last := st.upos, len(s.under)-1
	s.under[i] = s.under[last]
	s.under[i].upos = i
	s.under[last] = nil
	s.under = s.under[:last]
	st.upos = -1
}

// enqueue puts a task without live copies in its class's queue.
func (s *Scheduler) enqueue(t *task) {
	if t.qpos >= 0 || t.done() || t.held || len(t.copies) > 0 {
		return
	}
	st := t.set
	if s.reqClass(t) {
		st.rq.push(t)
		s.queuedReq++
		s.updateUnder(st)
		s.markKey(st)
		return
	}
	st.dq.push(t)
	s.queuedDisc++
	if st.dq.len() == 1 {
		s.discJobs++
	}
	s.syncDisclosed(st)
}

// dequeue takes a task out of whichever queue holds it.
func (s *Scheduler) dequeue(t *task) {
	if t.qpos < 0 {
		return
	}
	st := t.set
	if pos := int(t.qpos); pos < st.rq.len() && st.rq.items[pos] == t {
		st.rq.remove(t)
		s.queuedReq--
		s.updateUnder(st)
		s.markKey(st)
		return
	}
	st.dq.remove(t)
	s.queuedDisc--
	if st.dq.len() == 0 {
		s.discJobs--
	}
	s.syncDisclosed(st)
}

// addRunning records that t has a running copy.
func (s *Scheduler) addRunning(t *task) {
	if t.rpos >= 0 {
		return
	}
	st := t.set
	t.rpos = int32(len(st.running))
	st.running = append(st.running, t)
}

func (s *Scheduler) dropRunning(t *task) {
	if t.rpos < 0 || t.running() > 0 {
		return
	}
	st := t.set
	i := int(t.rpos)
	last := len(st.running) - 1
	st.running[i] = st.running[last]
	st.running[i].rpos = int32(i)
	st.running[last] = nil
	st.running = st.running[:last]
	t.rpos = -1
}

// takeSlot puts c on slot of w (which must be free) as a running copy.
func (s *Scheduler) takeSlot(c *liveCopy, w *worker, slot int32) {
	w.busy[slot] = c
	s.freeN--
	s.touch(c.task)
	c.worker, c.slot, c.state = w, slot, cRunning
	c.task.lost = false
	c.task.set.lastStart = max(c.task.set.lastStart, c.started)
	s.takeExtra(c, w)
	s.wheap.update(w)
	s.busy += c.slots()
	s.running++
	t := c.task
	t.set.nrun++
	s.syncDisclosed(t.set)
	if s.reqClass(t) {
		t.set.held += c.slots()
		s.updateUnder(t.set)
	} else if !t.done() {
		s.preempt.push(c)
	}
	s.addRunning(t)
}

// freeSlot gives back the slot of running copy c.
func (s *Scheduler) freeSlot(c *liveCopy) {
	w := c.worker
	if c.state != cRunning || w == nil {
		return
	}
	n := c.slots()
	s.releaseSlot(w, c, c.slot)
	if c.nextra > 0 {
		for x := range w.busy {
			if w.busy[x] == c {
				s.releaseSlot(w, c, int32(x))
			}
		}
		c.nextra = 0
	}
	s.wheap.update(w)
	s.busy -= n
	s.running--
	t := c.task
	t.set.nrun--
	s.syncDisclosed(t.set)
	if s.reqClass(t) {
		t.set.held -= n
		s.updateUnder(t.set)
	}
	s.preempt.remove(c)
	c.state = cSuspended // provisional: the caller sets the real outcome
	s.dropRunning(t)
	s.touch(t)
}

// endCopy removes live copy c for good (killed, lost, finished).
func (s *Scheduler) endCopy(c *liveCopy) {
	if c.state == cRunning {
		s.freeSlot(c)
	} else {
		s.suspended--
		c.task.set.nsusp--
		removeCopy(&c.worker.suspended, c)
	}
	if c.spec {
		s.specLive--
	}
	// A suspended copy keeps its memory; it is given back only here.
	c.worker.memUsed -= int64(c.task.memMB)
	c.worker.gpuUsed -= int32(c.task.gpus)
	removeCopy(&c.task.copies, c)
	delete(s.copies, c.id)
	c.state = 255
}

func removeCopy(cs *[]*liveCopy, c *liveCopy) {
	a := *cs
	for i, x := range a {
		if x == c {
			copy(a[i:], a[i+1:])
			a[len(a)-1] = nil
			*cs = a[:len(a)-1]
			return
		}
	}
}

// killCopies ends every live copy of t and queues Kill decisions.
func (s *Scheduler) killCopies(t *task, reason string) {
	for len(t.copies) > 0 {
		c := t.copies[0]
		s.pending = append(s.pending, Decision{Kind: DecisionKill, Copy: c.id, Task: t.ref(), Slot: SlotRef{Worker: c.worker.id, Slot: c.slot}, Speculative: c.spec, Reason: reason})
		s.endCopy(c)
	}
}

// setState moves t to state ns, keeping queues, jobs and counters right.
func (s *Scheduler) setState(t *task, ns uint8, now Time) {
	defer s.touch(t)
	if wasFinal := t.final(); wasFinal != (ns == stFinished || ns == stCanceled) {
		if wasFinal {
			t.set.open++
		} else {
			t.set.open--
			defer s.forgetIfClosed(t.set)
		}
	}
	wasReq := s.reqClass(t)
	s.dequeue(t)
	if wasReq && !t.done() {
		s.leaveJob(t)
	}
	if !wasReq && !t.done() {
		for _, c := range t.copies {
			if c.state == cRunning {
				s.preempt.remove(c)
			}
		}
	}
	t.state = ns
	if t.done() {
		return
	}
	if s.reqClass(t) {
		s.joinJob(t, now)
	} else {
		for _, c := range t.copies {
			if c.state == cRunning {
				s.preempt.push(c)
			}
		}
	}
	s.enqueue(t)
}

// observe adds a winning copy's duration to the history of its set (when
// known), its owner, everything, and β.
func (s *Scheduler) observe(st *set, owner string, dur float64, staleScans bool) {
	if st != nil {
		st.durSum += dur
		st.durN++
		if staleScans {
			// t_new of the set's tasks without an estimate moved: cached
			// speculation scans of the set are stale.
			for i := range st.spec {
				st.spec[i].at = math.Inf(-1)
			}
		}
	}
	o := s.owners[owner]
	if o == nil {
		o = &ownerStats{}
		s.owners[owner] = o
	}
	o.sum += dur
	o.n++
	s.global.sum += dur
	s.global.n++
	s.beta.add(dur)
}
