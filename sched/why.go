package sched

import (
	"math"
	"strconv"
)

// This file answers "why is this task waiting?" from the scheduler's own
// state: no I/O, no clock but the now it is handed, and nothing changed.
// Every count is a bounded walk of a structure Decide keeps anyway (a
// queue heap, the job treap, the disclosed sets' heap), cut at WhyScanLimit
// nodes, so an answer costs O(WhyScanLimit + log n) whatever the queue's
// length (BenchmarkWhy: 10^6 queued tasks).

// WhyReason says why a task is not running, in DESIGN.md's words.
type WhyReason string

const (
	// WhyRunning: a copy of the task runs; it is not waiting.
	WhyRunning WhyReason = "running"
	// WhyNotWaiting: the task needs no run (executed, finished, canceled).
	WhyNotWaiting WhyReason = "not-waiting"
	// WhyNext: no queued task of its class goes before it in the slots
	// that are free (or, for requested work, that disclosed copies hold):
	// it starts at the next decision.
	WhyNext WhyReason = "next"
	// WhyNoFreeSlot: every slot is busy with work that goes first.
	WhyNoFreeSlot WhyReason = "no-free-slot"
	// WhyCapped: the set runs as many copies as its --max-running allows.
	WhyCapped WhyReason = "max-running"
	// WhyDisclosedWaits: disclosed work runs only on slots no requested
	// task wants, and requested work holds or wants them.
	WhyDisclosedWaits WhyReason = "disclosed-waits-for-idle-slots"
	// WhySuspended: its copy was suspended to make room for requested
	// work and resumes when a slot of its worker frees.
	WhySuspended WhyReason = "suspended-for-requested-work"
	// WhyWorkerLost: its copy was lost with a worker; it queued again and
	// waits for a slot.
	WhyWorkerLost WhyReason = "worker-lost-requeued"
	// WhyResources: no worker has the free slots, memory and GPUs it
	// requests. Detail says so when GPUs are what none has free.
	WhyResources WhyReason = "waiting-for-resources"
	// WhyNoWorker: no worker is up; it waits for one to register.
	WhyNoWorker WhyReason = "no-worker-up"
	// WhyNeverFits: no worker up has as many slots, as much memory or as
	// many GPUs as it asks for, even idle; it waits for a bigger worker to
	// register. Detail says so when GPUs are what none has.
	WhyNeverFits WhyReason = "no-worker-fits"
	// WhyNoWorkerForOwner: every worker up is bound to another user (it
	// runs tasks without isolation, so only its own user's); Detail names
	// them.
	WhyNoWorkerForOwner WhyReason = "no-worker-for-owner"
	// WhyHeld: the task is held (batchctl hold): it starts no copy until
	// released; a running copy goes on.
	WhyHeld WhyReason = "held"
	// WhyDependency: its set waits for the sets or tasks it was disclosed
	// after (--after) to end; the server's Detail names them and what is
	// left of them.
	WhyDependency WhyReason = "waiting-for-dependency"
	// WhyNoTimeLeft: every worker up that may run it ends (a pilot's time
	// limit) before a copy of it would; Detail gives the times.
	WhyNoTimeLeft WhyReason = "no-worker-time-left"
	// WhyRoute: its set is routed to a pool or partition (route.go) whose
	// workers are none up, or all busy; Detail says which.
	WhyRoute WhyReason = "waiting-for-pool"
)

// Short is the reason in a word or two, for a table's column.
func (r WhyReason) Short() string {
	switch r {
	case WhyRunning:
		return "running"
	case WhyNotWaiting:
		return "-"
	case WhyNext:
		return "next"
	case WhyNoFreeSlot:
		return "no free slot"
	case WhyCapped:
		return "max-running"
	case WhyDisclosedWaits:
		return "idle slots only"
	case WhySuspended:
		return "suspended"
	case WhyWorkerLost:
		return "worker lost"
	case WhyResources:
		return "resources"
	case WhyNoWorker:
		return "no worker up"
	case WhyNeverFits:
		return "no worker fits"
	case WhyFairShare:
		return "fair share"
	case WhyNoWorkerForOwner:
		return "no worker for owner"
	case WhyHeld:
		return "held"
	case WhyDependency:
		return "dependency"
	case WhyNoTimeLeft:
		return "no time left"
	case WhyRoute:
		return "pool"
	}
	return string(r)
}

// Text is the reason in a sentence for people.
func (r WhyReason) Text() string {
	switch r {
	case WhyRunning:
		return "running"
	case WhyNotWaiting:
		return "not waiting: it needs no run"
	case WhyNext:
		return "next in line: starts at the next decision"
	case WhyNoFreeSlot:
		return "no free slot"
	case WhyCapped:
		return "capped by --max-running"
	case WhyDisclosedWaits:
		return "disclosed work waits for idle slots"
	case WhySuspended:
		return "suspended for requested work"
	case WhyWorkerLost:
		return "worker lost, requeued"
	case WhyResources:
		return "waiting for a resource request"
	case WhyNoWorker:
		return "no worker is up: it starts when one registers"
	case WhyNeverFits:
		return "no worker up is big enough for it (slots, memory or GPUs): it starts only if a bigger worker registers"
	case WhyFairShare:
		return "its owner holds its fair share while other users wait"
	case WhyNoWorkerForOwner:
		return "no worker may run its owner's tasks"
	case WhyHeld:
		return "held: it starts when released (batchctl release)"
	case WhyDependency:
		return "waiting for the sets or tasks it depends on to end"
	case WhyNoTimeLeft:
		return "every worker up ends before it would: it starts when a worker with time enough registers"
	}
	return string(r)
}

// WhyScanLimit bounds the nodes one Why call visits per structure; counts
// that reach it are lower bounds (WhyAnswer.Exact is false).
const WhyScanLimit = 256

// WhyAnswer is what the scheduler says about one task.
type WhyAnswer struct {
	Task   TaskRef
	State  TaskState
	Class  string // "requested" or "disclosed" ("" when the task needs no run)
	Reason WhyReason
	// Position counts the queued tasks of the same set and class that
	// start before it (0: first of its set).
	Position int
	// JobsAhead counts the sets of its class whose queued work is served
	// before its set's: jobs in SRPT (or FCFS) order for requested work,
	// sets disclosed earlier for disclosed work.
	JobsAhead int
	// TasksAhead counts the queued tasks that start before it: Position,
	// the queued tasks of the jobs ahead (sets at their cap excluded), and
	// for disclosed work every queued requested task.
	TasksAhead int
	// Exact is false when a count reached WhyScanLimit and is a lower
	// bound: PositionExact and AheadExact say which (Exact is both).
	Exact                     bool
	PositionExact, AheadExact bool
	// StartLowerBound and FinishLowerBound say that StartInSeconds and
	// FinishInSeconds are "not before" bounds, not estimates: the counts
	// of tasks ahead they rest on were cut short.
	StartLowerBound, FinishLowerBound bool
	// PastEstimate: every running copy has run past the task's estimate
	// with no progress report, so FinishInSeconds is unknown (-1).
	PastEstimate bool
	// FreeSlots and Slots are the cluster's now; MaxRunning and Running
	// are the set's cap (0 = none) and running copies.
	FreeSlots, Slots    int
	MaxRunning, Running int
	// StartInSeconds and FinishInSeconds estimate when the task starts and
	// finishes, from now; negative when unknown. Assumptions says what the
	// estimate takes for granted.
	StartInSeconds, FinishInSeconds float64
	Assumptions                     string
	// Detail is the reason in a sentence about this task, where Reason's
	// Text is not enough (WhyNoWorkerForOwner: the workers and whom they
	// run for); "" otherwise.
	Detail string
}

// Why says where task ref stands and why it waits, at now. It changes
// nothing. Errors: ENOTFOUND for a task the scheduler does not hold (a
// set whose tasks all ended is dropped from its state only by a restart).
func (s *Scheduler) Why(ref TaskRef, now Time) (WhyAnswer, error) {
	s.tickTo(now)
	if w := s.waiting[ref.Set]; w != nil {
		return w.why(ref)
	}
	st := s.sets[ref.Set]
	if st == nil || st.task(ref.Index) == nil {
		return WhyAnswer{}, Errorf(ENOTFOUND, "why: task %d/%d not known to the scheduler", ref.Set, ref.Index)
	}
	t := st.task(ref.Index)
	a := WhyAnswer{Task: ref, State: toTaskState(t.state), Exact: true, PositionExact: true, AheadExact: true, FreeSlots: s.freeN, Slots: s.slots,
		MaxRunning: int(st.maxRun), Running: int(st.nrun), StartInSeconds: -1, FinishInSeconds: -1}
	if t.done() {
		a.Reason = WhyNotWaiting
		return a, nil
	}
	if t.held && t.running() == 0 {
		a.Reason, a.Class = WhyHeld, "disclosed"
		if t.state == stRequested {
			a.Class = "requested"
		}
		return a, nil
	}
	req := s.reqClass(t)
	a.Class = "disclosed"
	if req {
		a.Class = "requested"
	}
	tn, tnOK := s.tNew(t)
	src := s.tNewSource(t)
	if t.running() > 0 {
		a.Reason = WhyRunning
		a.StartInSeconds = 0
		rem, past, ran := math.Inf(1), true, 0.0
		for _, c := range t.copies {
			if c.state != cRunning {
				continue
			}
			r, over := s.whyRem(c, now)
			if !over {
				rem, past = min(rem, r), false
			}
			ran = max(ran, c.runTime(now))
		}
		if past {
			a.PastEstimate, a.FinishInSeconds = true, -1
			b := append([]byte("no estimate of its end: it has run "), appendSeconds(nil, ran)...)
			b = append(b, ", past its estimate of "...)
			b = appendSeconds(b, t.est)
			a.Assumptions = string(append(b, " (no progress report)"...))
			return a, nil
		}
		a.FinishInSeconds = rem
		if t.est > 0 {
			a.Assumptions = "finish: the fastest running copy's remaining time, from its progress report or, without one, its estimate less the time it has run"
		} else {
			a.Assumptions = "finish: the fastest running copy's remaining time, from its progress report or, without one, from its run time and the fitted tail of task durations"
		}
		return a, nil
	}

	// Position in its own queue, and the work ahead of it in its class.
	if t.qpos >= 0 {
		h := &st.dq
		if req {
			h = &st.rq
		}
		n, exact := countBefore(h, t)
		a.Position, a.PositionExact = n, exact
	}
	a.Exact = a.PositionExact
	ahead := a.Position
	// capAhead: the set's own queued tasks that take its cap's room first
	// (its requested ones, for a disclosed task).
	capAhead := a.Position
	if req {
		jobs, tasks, exact := s.requestedAhead(st)
		a.JobsAhead = jobs
		ahead += tasks
		a.AheadExact = a.PositionExact && exact
	} else {
		jobs, tasks, exact := s.disclosedAhead(st)
		_, reqTasks, reqExact := s.requestedAhead(nil)
		a.JobsAhead = jobs
		ahead += tasks + reqTasks
		a.AheadExact = a.PositionExact && exact && reqExact
		if !s.capped(st) {
			// The set's requested tasks and its suspended copies take
			// the room under its cap first.
			capAhead += st.rq.len() + int(st.nsusp)
		}
	}
	a.TasksAhead = ahead
	a.Exact = a.PositionExact && a.AheadExact

	avail := s.freeN
	if req && s.cfg.Preemption != PreemptOff {
		avail += len(s.preempt.items)
	}
	if s.selective() > 0 {
		avail = s.roomFor(t, req && s.cfg.Preemption != PreemptOff)
	}
	switch {
	case len(t.copies) > 0:
		a.Reason = WhySuspended
	case s.capped(st) || (st.maxRun > 0 && capAhead >= int(st.maxRun-st.nrun)):
		// At its cap, or the tasks of its set before it will fill it.
		a.Reason = WhyCapped
	case s.slots == 0:
		a.Reason = WhyNoWorker
	case s.nbound > 0 && s.shutOut(t):
		a.Reason, a.Detail = WhyNoWorkerForOwner, s.boundDetail(st.owner)
	case s.nends > 0 && s.timeShutOut(t):
		a.Reason, a.Detail = WhyNoTimeLeft, s.timeDetail(t)
	case t.routed() && !s.routeUp(t):
		a.Reason, a.Detail = WhyRoute, s.routeDetail(t, false)
	case !s.couldEverFit(t):
		a.Reason, a.Detail = WhyNeverFits, s.gpuDetail(t, true)
	case t.routed() && s.wheap.fit(nil, t) == nil:
		a.Reason, a.Detail = WhyRoute, s.routeDetail(t, true)
	case !t.plain() && s.wheap.fit(nil, t) == nil:
		// No worker has the free slots, memory and GPUs it asks for now.
		a.Reason, a.Detail = WhyResources, s.gpuDetail(t, false)
	case !req && s.noDisc:
		a.Reason = WhyDisclosedWaits
	case ahead < avail && (req || s.suspended == 0):
		a.Reason = WhyNext
	case t.lost:
		a.Reason = WhyWorkerLost
	case !req && (s.queuedReq > 0 || s.busy > len(s.preempt.items)):
		a.Reason = WhyDisclosedWaits
	default:
		a.Reason = WhyNoFreeSlot
	}

	// ETA: the slots work through the tasks ahead, then this one.
	if a.Reason == WhyNeverFits {
		a.Assumptions = "no estimate: it starts only if a worker big enough for it registers"
		return a, nil
	}
	if !tnOK || s.slots == 0 || (!req && s.noDisc) {
		a.Assumptions = "no estimate: the task has none, and no task of this set, its owner or anyone has finished yet"
		if s.slots == 0 {
			a.Assumptions = "no estimate: no worker slots are up"
		}
		return a, nil
	}
	per := tn
	if m, ok := s.meanDuration(); ok && ahead > a.Position {
		per = m
	}
	S := float64(s.slots)
	start := math.Max(0, float64(ahead+1-avail)) / S * per
	if a.Reason == WhyNext {
		start = 0
	}
	if st.maxRun > 0 {
		room := int(st.maxRun - st.nrun)
		own := math.Max(0, float64(capAhead+1-max(room, 0))) / float64(st.maxRun) * tn
		start = math.Max(start, own)
	}
	a.StartInSeconds = start
	a.FinishInSeconds = start + tn
	// Counts cut at WhyScanLimit make the ETA a "not before" bound.
	a.StartLowerBound = !a.Exact && a.Reason != WhyNext
	a.FinishLowerBound = a.StartLowerBound
	// Built without fmt: the text is most of an answer's cost otherwise.
	b := make([]byte, 0, 320)
	if !a.Exact {
		b = append(b, "at least "...)
	}
	b = appendPlural(b, ahead, "task")
	b = append(b, " ahead, on all "...)
	b = appendPlural(b, s.slots, "slot")
	b = append(b, " at "...)
	b = appendSeconds(b, per)
	b = append(b, " each ("...)
	b = append(b, aheadSource(per == tn, src)...)
	b = append(b, "); this one takes "...)
	b = appendSeconds(b, tn)
	b = append(b, " ("...)
	b = append(b, src...)
	b = append(b, "); "...)
	if req {
		b = append(b, "requested work is served in job order (Hopper splits slots between jobs, so it may start sooner)"...)
	} else {
		b = append(b, "no new requested work arrives and nothing preempts it"...)
	}
	if st.maxRun > 0 {
		b = append(b, "; its set runs at most "...)
		b = appendPlural(b, int(st.maxRun), "copy")
		b = append(b, " at once"...)
	}
	b = append(b, "; speculative copies and stragglers not counted"...)
	a.Assumptions = string(b)
	s.fairWhy(&a, t, per, tn)
	return a, nil
}

// whyRem is a running copy's remaining time for Why: from its progress
// report when it made one; else, for a task with its own estimate, the
// estimate less the time it has run, and over (no estimate of its end)
// once it has run past it; else the fitted tail (tRem). The scheduler's
// own choices keep tRem: this only keeps Why from presenting the tail's
// growing guess as if it were the estimate the user gave.
func (s *Scheduler) whyRem(c *liveCopy, now Time) (rem float64, over bool) {
	t := c.task
	if (c.progress > 0 && c.progress <= 1) || t.est <= 0 {
		return s.tRem(c, now), false
	}
	ran := c.runTime(now)
	if ran >= t.est {
		return -1, true
	}
	return t.est - ran, false
}

// appendPlural appends "n words" ("1 word", "n copies").
func appendPlural(b []byte, n int, word string) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	switch {
	case n == 1:
		return append(b, word...)
	case word == "copy":
		return append(b, "copies"...)
	}
	b = append(b, word...)
	return append(b, 's')
}

// appendSeconds appends seconds with three significant digits and "s".
func appendSeconds(b []byte, v float64) []byte {
	return append(strconv.AppendFloat(b, v, 'g', 3, 64), 's')
}

func aheadSource(same bool, src string) string {
	if same {
		return src
	}
	return "mean of all finished tasks"
}

// tNewSource names where tNew(t) comes from.
func (s *Scheduler) tNewSource(t *task) string {
	switch {
	case t.est > 0:
		return "its estimate"
	case t.set.durN > 0:
		return "mean of this set's finished tasks"
	}
	if o := s.owners[t.set.owner]; o != nil && o.n > 0 {
		return "mean of the owner's finished tasks"
	}
	return "mean of all finished tasks"
}

// meanDuration is the mean winning-copy duration of everything.
func (s *Scheduler) meanDuration() (float64, bool) {
	if s.global.n == 0 {
		return 0, false
	}
	return s.global.sum / float64(s.global.n), true
}

// countBefore counts the items of heap h that come before t (which h
// holds), visiting at most WhyScanLimit of them: in a heap every item
// before t has its parent before t too, so the walk prunes at the first
// item that is not.
func countBefore(h *taskHeap, t *task) (int, bool) {
	var stack [64]int
	todo := append(stack[:0], 0)
	n := 0
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if i >= len(h.items) {
			continue
		}
		x := h.items[i]
		if x == t || !h.less(x, t) {
			continue
		}
		n++
		if n >= WhyScanLimit {
			return n, false
		}
		todo = append(todo, 2*i+1, 2*i+2)
	}
	return n, true
}

// requestedAhead counts the requested jobs before st in job order (every
// job when st is nil) and their queued tasks (jobs at their cap take no
// slot and are not counted).
func (s *Scheduler) requestedAhead(st *set) (jobs, tasks int, exact bool) {
	var stack [64]*set
	it := jobIter{stack: stack[:0]}
	it.start(s.jobs.root)
	for j := it.next(); j != nil; j = it.next() {
		if st != nil && (j == st || !st.inTree || !jobBefore(j, st)) {
			return jobs, tasks, true
		}
		jobs++
		if !s.capped(j) {
			tasks += j.rq.len()
		}
		if jobs >= WhyScanLimit {
			return jobs, tasks, false
		}
	}
	return jobs, tasks, true
}

// disclosedAhead counts the sets in the disclosed heap served before st
// and their queued disclosed tasks, with the same pruned walk as
// countBefore.
func (s *Scheduler) disclosedAhead(st *set) (jobs, tasks int, exact bool) {
	h := s.dsets.items
	var stack [64]int
	todo := append(stack[:0], 0)
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if i >= len(h) {
			continue
		}
		x := h[i]
		if x == st || !setBefore(x, st) {
			continue
		}
		jobs++
		tasks += x.dq.len()
		if jobs >= WhyScanLimit {
			return jobs, tasks, false
		}
		todo = append(todo, 2*i+1, 2*i+2)
	}
	return jobs, tasks, true
}
