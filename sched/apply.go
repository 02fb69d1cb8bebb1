// Apply and its event handlers: workers up and down, tasks disclosed,
// requested, canceled, attached, and copies finished.

package sched

import (
	"math"
	"slices"
)

// Apply records one event. It returns an error only for a malformed event
// (unknown set or task, bad field); events about copies the scheduler no
// longer holds are accepted and ignored, because drivers race.
func (s *Scheduler) Apply(ev Event) (ApplyResult, error) {
	if math.IsNaN(ev.Time) || math.IsInf(ev.Time, 0) {
		return ApplyResult{}, Errorf(EINVALID, "event time %v is not a number", ev.Time)
	}
	s.tickTo(ev.Time)
	if res, err, ok := s.routeWaiting(ev); ok {
		return res, err
	}
	switch ev.Kind {
	case EventWorkerUp:
		return ApplyResult{}, s.workerUp(ev)
	case EventWorkerDown:
		return ApplyResult{}, s.workerDown(ev)
	case EventWorkerStopping:
		return ApplyResult{}, s.workerStopping(ev)
	case EventDisclosed:
		return ApplyResult{}, s.disclosed(ev)
	case EventRequested:
		return s.requested(ev)
	case EventCanceled:
		return ApplyResult{}, s.canceled(ev)
	case EventRetried:
		return ApplyResult{}, s.retried(ev)
	case EventCopyAttached:
		return ApplyResult{}, s.attached(ev)
	case EventCopyProgress:
		if c := s.copies[ev.Copy]; c != nil {
			if ev.Progress >= 0 && ev.Progress <= 1 {
				c.progress = ev.Progress
			} else {
				c.progress = -1
			}
			s.touch(c.task)
		}
		return ApplyResult{}, nil
	case EventCopyFinished:
		return s.finished(ev)
	case EventCopyLost:
		if c := s.copies[ev.Copy]; c != nil {
			s.lose(c)
		}
		return ApplyResult{}, nil
	case EventLateResult:
		return s.lateResult(ev)
	case EventStopped:
		return s.stopped(ev)
	case EventHeld:
		return s.held(ev)
	case EventReleased:
		return s.released(ev)
	case EventDurationObserved:
		if !(ev.Duration >= 0) || math.IsInf(ev.Duration, 0) {
			return ApplyResult{}, Errorf(EINVALID, "duration %v is not a number of seconds", ev.Duration)
		}
		owner := ev.Owner
		st := s.sets[ev.Set]
		if st != nil {
			owner = st.owner
		}
		if ev.Censored {
			s.beta.addCensored(ev.Duration)
			return ApplyResult{}, nil
		}
		s.observe(st, owner, ev.Duration, true)
		return ApplyResult{}, nil
	}
	return ApplyResult{}, Errorf(EINVALID, "unknown event kind %d", ev.Kind)
}

func (s *Scheduler) workerUp(ev Event) error {
	if ev.Worker == "" {
		return Errorf(EINVALID, "worker without an id")
	}
	if ev.Slots < 0 || ev.Slots > 1<<20 {
		return Errorf(EINVALID, "worker %s: %d slots", ev.Worker, ev.Slots)
	}
	if err := checkWorkerEnd(ev.Worker, ev.EndsAt); err != nil {
		return err
	}
	w := s.workers[ev.Worker]
	if w == nil {
		w = &worker{id: ev.Worker, hpos: -1}
		s.workers[ev.Worker] = w
		s.wheap.push(w)
	}
	w.canSuspend = ev.CanSuspend
	s.bind(w, ev.BoundUser)
	s.setWorkerEnd(w, ev.EndsAt)
	if ev.MemoryMB < 0 {
		return Errorf(EINVALID, "worker %s: %d MiB of memory", ev.Worker, ev.MemoryMB)
	}
	w.memMB = ev.MemoryMB
	if ev.GPUs < 0 || ev.GPUs > MaxWorkerGPUs {
		return Errorf(EINVALID, "worker %s: %d GPUs (at most %d)", ev.Worker, ev.GPUs, MaxWorkerGPUs)
	}
	w.gpus = ev.GPUs
	if err := ev.Route.Validate(); err != nil {
		return err
	}
	w.route = ev.Route
	old := w.slots
	w.slots = ev.Slots
	for int32(len(w.busy)) < w.slots {
		w.busy = append(w.busy, nil)
	}
	s.slots += int(w.slots) - int(old)
	s.freeN -= w.free()
	w.freeSlots = w.freeSlots[:0]
	for i := int32(0); i < w.slots; i++ {
		if w.busy[i] == nil {
			w.freeSlots.push(i)
		}
	}
	s.freeN += w.free()
	s.wheap.update(w)
	return nil
}

func (s *Scheduler) workerDown(ev Event) error {
	w := s.workers[ev.Worker]
	if w == nil {
		return nil
	}
	var live []*liveCopy
	for _, c := range w.busy {
		if c != nil {
			live = append(live, c)
		}
	}
	live = append(live, w.suspended...)
	slices.SortFunc(live, func(a, b *liveCopy) int { return cmpCopyID(a.id, b.id) })
	live = slices.Compact(live) // a copy on several slots appears once a slot
	for _, c := range live {
		s.lose(c)
	}
	s.slots -= int(w.slots)
	s.freeN -= w.free()
	s.bind(w, "")
	s.setWorkerEnd(w, 0)
	s.wheap.remove(w)
	delete(s.workers, w.id)
	return nil
}

func cmpCopyID(a, b CopyID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lose ends c without a result; its task queues again if nothing else runs it.
func (s *Scheduler) lose(c *liveCopy) {
	t := c.task
	s.endCopy(c)
	if len(t.copies) == 0 {
		t.lost = !t.done()
		s.enqueue(t)
	}
}

const maxIndexGap = 1 << 20

func (s *Scheduler) disclosed(ev Event) error {
	st := s.sets[ev.Set]
	if len(ev.Tasks) == 0 {
		if st == nil {
			// A set whose tasks all ended is forgotten: nothing of it runs
			// to cap. A later disclose into it carries its cap again.
			return nil
		}
		switch {
		case ev.MaxRunning > 0:
			s.setMaxRunning(st, ev.MaxRunning)
		case ev.MaxRunning == NoMaxRunning:
			s.setMaxRunning(st, 0)
		}
		return nil
	}
	// Validate everything before changing anything.
	lo, top := math.MaxInt32, -1
	for _, ti := range ev.Tasks {
		if ti.Index < 0 {
			return Errorf(EINVALID, "set %d: task index %d out of range", ev.Set, ti.Index)
		}
		lo, top = min(lo, int(ti.Index)), max(top, int(ti.Index))
	}
	// The tasks slice spans the indexes held, holes included: bound the
	// holes.
	held, first := 0, lo
	if st != nil && len(st.tasks) > 0 {
		held, first = len(st.tasks), min(lo, int(st.lo))
	}
	if span := max(top+1, first+held) - first; span > held+len(ev.Tasks)+maxIndexGap {
		return Errorf(EINVALID, "set %d: task indexes %d to %d leave more than %d unused indexes among the %d held", ev.Set, lo, top, maxIndexGap, held)
	}
	seen := make([]uint64, (top-lo)/64+1) // a bit per index from lo to top
	for _, ti := range ev.Tasks {
		i := int(ti.Index) - lo
		w, bit := i/64, uint64(1)<<(i%64)
		if seen[w]&bit != 0 || (st != nil && st.task(ti.Index) != nil) {
			return Errorf(ECONFLICT, "set %d: task %d disclosed twice", ev.Set, ti.Index)
		}
		seen[w] |= bit
		if _, ok := fromTaskState(ti.State); !ok {
			return Errorf(EINVALID, "set %d task %d: unknown state %q", ev.Set, ti.Index, ti.State)
		}
		if ti.Cpus < 0 || ti.Cpus > MaxCpus || ti.MemoryMB < 0 || ti.MemoryMB > MaxMemoryMB {
			return Errorf(EINVALID, "set %d task %d: %d cpus and %d MiB (at most %d and %d)", ev.Set, ti.Index, ti.Cpus, ti.MemoryMB, MaxCpus, MaxMemoryMB)
		}
		if ti.GPUs < 0 || ti.GPUs > MaxGPUs {
			return Errorf(EINVALID, "set %d task %d: %d GPUs (at most %d)", ev.Set, ti.Index, ti.GPUs, MaxGPUs)
		}
		if ti.EstimateSeconds < 0 || math.IsNaN(ti.EstimateSeconds) || math.IsInf(ti.EstimateSeconds, 0) || ti.DeadlineSeconds < 0 || math.IsNaN(ti.DeadlineSeconds) {
			return Errorf(EINVALID, "set %d task %d: bad estimate or deadline", ev.Set, ti.Index)
		}
	}
	if ev.MaxRunning < 0 {
		return Errorf(EINVALID, "set %d: max running %d is negative", ev.Set, ev.MaxRunning)
	}
	if err := ev.Route.Validate(); err != nil {
		return err
	}
	if st == nil {
		st = s.newSet(ev.Set, ev.Owner, ev.Time)
		st.route = ev.Route
	}
	if ev.MaxRunning > 0 {
		s.setMaxRunning(st, ev.MaxRunning)
	}
	if len(st.tasks) == 0 {
		st.lo = int32(lo)
	} else if int32(lo) < st.lo {
		// Indexes below the first held (an append after the set was
		// forgotten, or an out-of-order disclose): move the tasks up.
		grown := make([]*task, int(st.lo)-lo+len(st.tasks), int(st.lo)-lo+max(len(st.tasks), top+1-int(st.lo)))
		copy(grown[int(st.lo)-lo:], st.tasks)
		st.tasks, st.lo = grown, int32(lo)
	}
	if n := top + 1 - int(st.lo); n > len(st.tasks) {
		st.tasks = slices.Grow(st.tasks, n-len(st.tasks))
	}
	// The event's tasks in one allocation: no per-task allocator overhead
	// or size-class rounding.
	slab := make([]task, len(ev.Tasks))
	for i, ti := range ev.Tasks {
		for int(ti.Index-st.lo) >= len(st.tasks) {
			st.tasks = append(st.tasks, nil)
		}
		stt, _ := fromTaskState(ti.State)
		t := &slab[i]
		*t = task{set: st, index: ti.Index, est: ti.EstimateSeconds, deadline: ti.DeadlineSeconds, noSpec: ti.NoSpeculation, qpos: -1, rpos: -1, state: stDisclosed,
			cpus: uint16(ti.Cpus), memMB: uint32(ti.MemoryMB), gpus: uint8(ti.GPUs)}
		st.tasks[ti.Index-st.lo] = t
		if !t.final() {
			st.open++
		}
		t.held = ti.Held && !t.final()
		if stt == stRequested {
			t.requestedAt = ti.RequestedAt
			t.state = stRequested
		} else {
			t.state = stt
		}
		if s.reqClass(t) {
			at := ev.Time
			if t.state == stRequested && ti.RequestedAt != 0 {
				at = ti.RequestedAt
			}
			s.joinJob(t, at)
		}
		s.enqueue(t)
	}
	return nil
}

func (s *Scheduler) lookupTasks(ev Event, what string) (*set, []*task, error) {
	st := s.sets[ev.Set]
	if st == nil {
		return nil, nil, Errorf(ENOTFOUND, "%s: task set %d not found", what, ev.Set)
	}
	if ev.Indexes == nil {
		return st, nil, nil
	}
	ts := make([]*task, 0, len(ev.Indexes))
	for _, i := range ev.Indexes {
		t := st.task(i)
		if t == nil {
			return nil, nil, Errorf(ENOTFOUND, "%s: task %d of set %d not found", what, i, ev.Set)
		}
		ts = append(ts, t)
	}
	return st, ts, nil
}

func (s *Scheduler) requested(ev Event) (ApplyResult, error) {
	st, ts, err := s.lookupTasks(ev, "request")
	if err != nil {
		return ApplyResult{}, err
	}
	if ev.Indexes == nil {
		for _, t := range st.tasks {
			if t != nil && (t.state == stDisclosed || t.state == stExecuted) {
				ts = append(ts, t)
			}
		}
	} else {
		for _, t := range ts {
			if t.state == stCanceled {
				return ApplyResult{}, Errorf(EFAILEDPRECONDITION, "request: task %d of set %d was canceled", t.index, st.id)
			}
		}
	}
	var res ApplyResult
	for _, t := range ts {
		switch t.state {
		case stExecuted:
			t.requestedAt = ev.Time
			s.setState(t, stFinished, ev.Time)
			res.FinishedAtOnce = append(res.FinishedAtOnce, t.ref())
		case stDisclosed:
			t.requestedAt = ev.Time
			// A task whose only copies are suspended competes as queued
			// requested work; the suspended copy resumes if its worker has
			// room, otherwise a new copy replaces it.
			s.setState(t, stRequested, ev.Time)
			if !t.held && t.running() == 0 && len(t.copies) > 0 && t.qpos < 0 {
				t.set.rq.push(t)
				s.queuedReq++
				s.updateUnder(t.set)
			}
		}
	}
	return res, nil
}

func (s *Scheduler) canceled(ev Event) error {
	st, ts, err := s.lookupTasks(ev, "cancel")
	if err != nil {
		return err
	}
	if ev.Indexes == nil {
		for _, t := range st.tasks {
			if t != nil && (t.state == stDisclosed || t.state == stExecuted) {
				ts = append(ts, t)
			}
		}
	}
	for _, t := range ts {
		if t.final() {
			continue
		}
		s.killCopies(t, "canceled")
		s.setState(t, stCanceled, ev.Time)
	}
	return nil
}

func (s *Scheduler) attached(ev Event) error {
	w := s.workers[ev.Slot.Worker]
	if w == nil {
		return Errorf(ENOTFOUND, "attach copy %d: worker %s not found", ev.Copy, ev.Slot.Worker)
	}
	st := s.sets[ev.Task.Set]
	if st == nil || st.task(ev.Task.Index) == nil {
		return Errorf(ENOTFOUND, "attach copy %d: task %d/%d not found", ev.Copy, ev.Task.Set, ev.Task.Index)
	}
	t := st.task(ev.Task.Index)
	if !w.serves(t) {
		return Errorf(EPERMISSION, "attach copy %d: worker %s runs only %s's tasks, not %s's", ev.Copy, w.id, w.bound, st.owner)
	}
	if c := s.copies[ev.Copy]; c != nil {
		if c.task == t && c.worker == w && c.slot == ev.Slot.Slot {
			return nil // the same copy attached again
		}
		return Errorf(ECONFLICT, "attach copy %d: copy id already live elsewhere", ev.Copy)
	}
	if t.done() {
		return Errorf(EFAILEDPRECONDITION, "attach copy %d: task %d/%d needs no run", ev.Copy, st.id, t.index)
	}
	if ev.Copy <= 0 {
		return Errorf(EINVALID, "attach copy: bad copy id %d", ev.Copy)
	}
	c := &liveCopy{id: ev.Copy, task: t, spec: ev.Speculative, ppos: -1, progress: -1, started: ev.StartedAt}
	w.memUsed += int64(t.memMB)
	w.gpuUsed += int32(t.gpus)
	if ev.Suspended {
		c.worker, c.slot, c.state = w, ev.Slot.Slot, cSuspended
		c.runSoFar = math.Max(0, ev.Time-ev.StartedAt)
		w.suspended = append(w.suspended, c)
		s.suspended++
		st.nsusp++
	} else {
		if ev.Slot.Slot < 0 || ev.Slot.Slot >= w.slots {
			return Errorf(EINVALID, "attach copy %d: worker %s has no slot %d", ev.Copy, w.id, ev.Slot.Slot)
		}
		if o := w.busy[ev.Slot.Slot]; o != nil && o.slot != ev.Slot.Slot {
			// The slot is an extra slot of a copy attached before, which
			// took it for its task's cpus: that copy moves to another.
			s.moveExtra(w, o, ev.Slot.Slot)
		}
		if w.busy[ev.Slot.Slot] != nil {
			return Errorf(ECONFLICT, "attach copy %d: slot %s/%d holds copy %d", ev.Copy, w.id, ev.Slot.Slot, w.busy[ev.Slot.Slot].id)
		}
		w.freeSlots.removeValue(ev.Slot.Slot)
		s.takeSlot(c, w, ev.Slot.Slot)
	}
	s.dequeue(t)
	t.copies = append(t.copies, c)
	s.copies[c.id] = c
	if c.spec {
		s.specLive++
	}
	if ev.Copy >= s.nextCopy {
		s.nextCopy = ev.Copy + 1
	}
	return nil
}

// lateResult makes a lost copy's late result its task's: the task's
// re-runs are killed and it is done.
func (s *Scheduler) lateResult(ev Event) (ApplyResult, error) {
	st := s.sets[ev.Task.Set]
	if st == nil || st.task(ev.Task.Index) == nil {
		return ApplyResult{}, Errorf(ENOTFOUND, "task %d/%d is not known", ev.Task.Set, ev.Task.Index)
	}
	t := st.task(ev.Task.Index)
	if t.done() {
		return ApplyResult{}, nil
	}
	s.killCopies(t, "late-result")
	if t.state == stRequested {
		s.setState(t, stFinished, ev.Time)
	} else {
		s.setState(t, stExecuted, ev.Time)
	}
	return ApplyResult{Won: true}, nil
}

func (s *Scheduler) finished(ev Event) (ApplyResult, error) {
	c := s.copies[ev.Copy]
	if c == nil {
		return ApplyResult{}, nil
	}
	t := c.task
	if t.done() {
		// Cannot happen (the copies of a done task are ended at once), but
		// a result of a task that needs none is never the task's.
		s.endCopy(c)
		return ApplyResult{}, nil
	}
	dur := c.runTime(ev.Time)
	if ev.Duration > 0 && !math.IsInf(ev.Duration, 0) {
		s.observeLag(c, ev.Time, ev.Duration)
		dur = ev.Duration
	}
	s.observe(t.set, t.set.owner, dur, t.est == 0)
	if t.state == stRequested {
		s.fairUsage(t.set.owner, dur*float64(c.slots()), ev.Time)
	}
	if c.spec {
		s.specWon++
	}
	s.endCopy(c)
	for _, o := range t.copies {
		// The losers ran at least this long: censored samples for β.
		s.beta.addCensored(o.runTime(ev.Time))
	}
	s.killCopies(t, "lost-race")
	if t.state == stRequested {
		s.setState(t, stFinished, ev.Time)
	} else {
		s.setState(t, stExecuted, ev.Time)
	}
	return ApplyResult{Won: true}, nil
}
