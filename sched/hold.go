package sched

// Hold and release: a held task is in neither class for the scheduler. It
// leaves its queue (and, when requested, its Hopper job), starts no copy,
// speculative ones included, and its suspended copies stay suspended;
// running copies go on unless the hold asks to suspend them. Release puts
// it back in its class as if it had just arrived there.

func (s *Scheduler) held(ev Event) (ApplyResult, error) {
	ts := s.holdTargets(ev)
	var res ApplyResult
	for _, t := range ts {
		if t.done() {
			continue
		}
		s.setHeld(t, true, ev.Time)
		if ev.Suspend {
			res.Suspended += s.suspendHeld(t, ev.Time)
		}
	}
	return res, nil
}

func (s *Scheduler) released(ev Event) (ApplyResult, error) {
	for _, t := range s.holdTargets(ev) {
		s.setHeld(t, false, ev.Time)
	}
	return ApplyResult{}, nil
}

// holdTargets lists the tasks ev names (nil Indexes: every task of the
// set) that the scheduler holds and that need a run. Tasks it does not
// hold ended (their set may have been forgotten and made anew): a hold
// means nothing to them, so they are skipped, not refused, and the store
// and the scheduler agree on the rest.
func (s *Scheduler) holdTargets(ev Event) []*task {
	st := s.sets[ev.Set]
	if st == nil {
		return nil
	}
	var ts []*task
	if ev.Indexes == nil {
		for _, t := range st.tasks {
			if t != nil && !t.done() {
				ts = append(ts, t)
			}
		}
		return ts
	}
	for _, i := range ev.Indexes {
		if t := st.task(i); t != nil && !t.done() {
			ts = append(ts, t)
		}
	}
	return ts
}

// setHeld holds or releases t (one that needs a run), moving it out of or
// back into its class as setState moves a task between classes.
func (s *Scheduler) setHeld(t *task, held bool, now Time) {
	if t.held == held || t.done() {
		return
	}
	defer s.touch(t)
	wasReq := s.reqClass(t)
	s.dequeue(t)
	if wasReq {
		s.leaveJob(t)
	} else {
		for _, c := range t.copies {
			if c.state == cRunning {
				s.preempt.remove(c)
			}
		}
	}
	t.held = held
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
	if !held && s.reqClass(t) && t.running() == 0 && len(t.copies) > 0 && t.qpos < 0 {
		// Only suspended copies: it competes as queued requested work and
		// its copy resumes (startQueued), as a request of such a task does.
		t.set.rq.push(t)
		s.queuedReq++
		s.updateUnder(t.set)
	}
}

// suspendHeld suspends the running copies of held task t on workers that
// can suspend (Suspend decisions, "held"); copies elsewhere go on. It
// returns how many it suspended.
func (s *Scheduler) suspendHeld(t *task, now Time) int {
	n := 0
	for _, c := range append([]*liveCopy(nil), t.copies...) {
		if c.state != cRunning || !c.worker.canSuspend {
			continue
		}
		s.pending = append(s.pending, s.suspendCopy(c, now, "held"))
		n++
	}
	return n
}
