// Set dependencies (disclose --after): a set that waits for other sets or
// tasks to end. Its tasks are in neither class while it waits; when every
// dependency has ended as the set asked, the driver releases it
// (EventWaitEnded) and its tasks join their queues, disclosed or requested
// as given; when a dependency it needs to succeed failed or was canceled,
// the driver cancels it (EventCanceled) with that reason.
//
// What "ended" and "succeeded" mean is decided here, once, from a set's
// counts (SetOutcome) or a task's state (TaskOutcome), and which verdict a
// set's dependencies give is Resolve: the store, the server and the
// simulator all call these.

package sched

import (
	"fmt"
	"slices"
	"strconv"
)

// WholeSet is Dependency.Index for a dependency on a whole set.
const WholeSet int32 = -1

// MaxDependencies bounds the dependencies of one set.
const MaxDependencies = 64

// Dependency is one thing a set waits for: a whole set (Index WholeSet)
// or one of its tasks.
type Dependency struct {
	Set   SetID
	Index int32
	// Any releases the waiting set whatever the outcome; otherwise only
	// OutcomeOK releases it, and OutcomeFailed or OutcomeCanceled cancels
	// it.
	Any bool
}

// String writes d as batchctl takes it: "12", "12:any", "12/3", "12/3:any".
func (d Dependency) String() string {
	s := strconv.FormatInt(int64(d.Set), 10)
	if d.Index != WholeSet {
		s += "/" + strconv.FormatInt(int64(d.Index), 10)
	}
	if d.Any {
		s += ":any"
	}
	return s
}

// Subject names what d waits for, for people: "set 12" or "task 12/3".
func (d Dependency) Subject() string {
	if d.Index == WholeSet {
		return "set " + strconv.FormatInt(int64(d.Set), 10)
	}
	return "task " + strconv.FormatInt(int64(d.Set), 10) + "/" + strconv.FormatInt(int64(d.Index), 10)
}

// CheckDependencies refuses a list a set cannot wait on (EINVALID): too
// many, a bad set id or index, or the same subject twice.
func CheckDependencies(deps []Dependency) error {
	if len(deps) > MaxDependencies {
		return Errorf(EINVALID, "%d dependencies; at most %d", len(deps), MaxDependencies)
	}
	for i, d := range deps {
		if d.Set <= 0 || d.Index < WholeSet {
			return Errorf(EINVALID, "dependency %q: bad set or task", d.String())
		}
		for _, e := range deps[:i] {
			if e.Set == d.Set && e.Index == d.Index {
				return Errorf(EINVALID, "%s named twice as a dependency", d.Subject())
			}
		}
	}
	return nil
}

// Outcome is how a set or task ended, for its dependents.
type Outcome string

const (
	// OutcomePending: it has not ended.
	OutcomePending Outcome = ""
	// OutcomeOK: it ended and succeeded.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: it ended, and a requested task of it (or the task)
	// exited non-zero or timed out.
	OutcomeFailed Outcome = "failed"
	// OutcomeCanceled: it ended with nothing run to a result: every task
	// canceled (or the task canceled).
	OutcomeCanceled Outcome = "canceled"
)

// SetOutcome says how a set with counts c ended, failed being how many of
// its requested tasks' current attempts finished with a non-zero exit or
// a timeout.
//
// A set ends when no task of it can run any more: each is finished,
// executed (ran while disclosed) or canceled. Disclosed tasks that were
// never requested and have not run yet keep it open, since they may still
// run and be requested; cancel them ("cancel the rest") to end the set.
// It then failed when a requested task failed, was canceled when none of
// its tasks ran to a result, and succeeded otherwise: tasks canceled
// beside ones that succeeded (a stop rule, "cancel the rest") are no
// failure, and disclosed tasks nobody requested do not count.
func SetOutcome(c TaskCounts, failed int64) Outcome {
	switch {
	case c.Disclosed+c.Requested > 0 || c.Total == 0:
		return OutcomePending
	case failed > 0:
		return OutcomeFailed
	case c.Finished+c.Executed == 0:
		return OutcomeCanceled
	}
	return OutcomeOK
}

// TaskOutcome says how a task in state st that exited with exit (timedOut
// when it ran out of time) ended.
func TaskOutcome(st TaskState, exit int32, timedOut bool) Outcome {
	switch st {
	case TaskCanceled:
		return OutcomeCanceled
	case TaskFinished, TaskExecuted:
		if exit != 0 || timedOut {
			return OutcomeFailed
		}
		return OutcomeOK
	}
	return OutcomePending
}

// Verdict is what a waiting set's dependencies say now.
type Verdict int

const (
	// VerdictWait: a dependency has not ended.
	VerdictWait Verdict = iota
	// VerdictRelease: every dependency ended as the set asked.
	VerdictRelease
	// VerdictCancel: a dependency the set needs to succeed failed or was
	// canceled.
	VerdictCancel
)

// Resolve gives the verdict of deps, outcome[i] being how deps[i] ended,
// and for VerdictCancel the reason, for people ("set 12 failed"). A
// failed dependency cancels at once, whatever the others.
func Resolve(deps []Dependency, outcome []Outcome) (Verdict, string) {
	v := VerdictRelease
	for i, d := range deps {
		switch o := outcome[i]; {
		case o == OutcomePending:
			v = VerdictWait
		case !d.Any && o != OutcomeOK:
			return VerdictCancel, CancelReason(d, o)
		}
	}
	return v, ""
}

// CancelReason says why a set was canceled because dependency d ended with
// outcome o.
func CancelReason(d Dependency, o Outcome) string {
	verb := "failed"
	if o == OutcomeCanceled {
		verb = "was canceled"
	}
	return fmt.Sprintf("dependency %s %s", d.Subject(), verb)
}

// waitingSet is a set whose dependencies have not ended: its tasks as
// disclosed (with their states as requests and cancels move them), in
// neither queue.
type waitingSet struct {
	deps   []Dependency
	owner  string
	at     Time
	maxRun int32
	tasks  []TaskInfo // by index
}

// find returns the position of task i in w.tasks, -1 when it has none.
func (w *waitingSet) find(i int32) int {
	k, ok := slices.BinarySearchFunc(w.tasks, i, func(t TaskInfo, i int32) int { return int(t.Index) - int(i) })
	if !ok {
		return -1
	}
	return k
}

// Waiting reports whether set id waits for its dependencies.
func (s *Scheduler) Waiting(id SetID) bool { return s.waiting[id] != nil }

// applyWaiting handles the events about a waiting set (or a set disclosed
// as waiting): its tasks change state in place and join no queue.
func (s *Scheduler) applyWaiting(ev Event, w *waitingSet) (ApplyResult, error) {
	switch ev.Kind {
	case EventDisclosed:
		return ApplyResult{}, s.discloseWaiting(ev, w)
	case EventWaitEnded:
		s.dropWaiting(ev.Set, w)
		open := make([]TaskInfo, 0, len(w.tasks))
		for _, t := range w.tasks {
			if !t.State.Final() {
				open = append(open, t)
			}
		}
		if len(open) == 0 {
			return ApplyResult{}, nil
		}
		return ApplyResult{}, s.disclosed(Event{Kind: EventDisclosed, Time: ev.Time, Set: ev.Set, Owner: w.owner, Tasks: open, MaxRunning: w.maxRun})
	case EventHeld, EventReleased:
		// A hold waits with the set and applies once it is released.
		for j := range w.tasks {
			if ev.Indexes == nil || containsIndex(ev.Indexes, w.tasks[j].Index) {
				if !w.tasks[j].State.Final() {
					w.tasks[j].Held = ev.Kind == EventHeld
				}
			}
		}
	case EventRequested, EventCanceled:
		k, err := w.pick(ev)
		if err != nil {
			return ApplyResult{}, err
		}
		for _, j := range k {
			t := &w.tasks[j]
			switch {
			case ev.Kind == EventRequested && t.State == TaskCanceled && ev.Indexes != nil:
				return ApplyResult{}, Errorf(EFAILEDPRECONDITION, "request: task %d of set %d was canceled", t.Index, ev.Set)
			case ev.Kind == EventRequested && (t.State == "" || t.State == TaskDisclosed):
				t.State, t.RequestedAt = TaskRequested, ev.Time
			case ev.Kind == EventCanceled && !t.State.Final():
				t.State = TaskCanceled
			}
		}
	case EventRetried:
		for _, rt := range ev.Tasks {
			j := w.find(rt.Index)
			if j < 0 {
				return ApplyResult{}, Errorf(ENOTFOUND, "retry: task %d of set %d not found", rt.Index, ev.Set)
			}
			w.tasks[j].State, w.tasks[j].RequestedAt = rt.State, rt.RequestedAt
			if rt.State == TaskRequested && rt.RequestedAt == 0 {
				w.tasks[j].RequestedAt = ev.Time
			}
		}
	}
	return ApplyResult{}, nil
}

// pick returns the positions of the tasks an EventRequested or
// EventCanceled names (Indexes nil: every task not yet requested).
func (w *waitingSet) pick(ev Event) ([]int, error) {
	var k []int
	if ev.Indexes == nil {
		for j, t := range w.tasks {
			if t.State == "" || t.State == TaskDisclosed {
				k = append(k, j)
			}
		}
		return k, nil
	}
	for _, i := range ev.Indexes {
		j := w.find(i)
		if j < 0 {
			return nil, Errorf(ENOTFOUND, "task %d of set %d not found", i, ev.Set)
		}
		k = append(k, j)
	}
	return k, nil
}

// discloseWaiting adds ev's tasks to waiting set w (a new one when nil).
func (s *Scheduler) discloseWaiting(ev Event, w *waitingSet) error {
	if ev.MaxRunning < 0 {
		return Errorf(EINVALID, "set %d: max running %d is negative", ev.Set, ev.MaxRunning)
	}
	if w == nil {
		if s.sets[ev.Set] != nil {
			return Errorf(EFAILEDPRECONDITION, "set %d: already eligible, it cannot wait", ev.Set)
		}
		if err := CheckDependencies(ev.After); err != nil {
			return err
		}
		w = &waitingSet{owner: ev.Owner, at: ev.Time, deps: slices.Clone(ev.After)}
	}
	tasks := slices.Clone(w.tasks)
	for _, ti := range ev.Tasks {
		if ti.Index < 0 {
			return Errorf(EINVALID, "set %d: task index %d out of range", ev.Set, ti.Index)
		}
		if _, ok := fromTaskState(ti.State); !ok || ti.State == TaskExecuted {
			return Errorf(EINVALID, "set %d task %d: state %q cannot wait", ev.Set, ti.Index, ti.State)
		}
		tasks = append(tasks, ti)
	}
	slices.SortStableFunc(tasks, func(a, b TaskInfo) int { return int(a.Index) - int(b.Index) })
	for j := 1; j < len(tasks); j++ {
		if tasks[j].Index == tasks[j-1].Index {
			return Errorf(ECONFLICT, "set %d: task %d disclosed twice", ev.Set, tasks[j].Index)
		}
	}
	w.tasks = tasks
	if ev.MaxRunning > 0 {
		w.maxRun = ev.MaxRunning
	}
	if s.waiting == nil {
		s.waiting, s.waitOn = make(map[SetID]*waitingSet), make(map[SetID]int)
	}
	if s.waiting[ev.Set] == nil {
		for _, d := range w.deps {
			s.waitOn[d.Set]++
		}
	}
	s.waiting[ev.Set] = w
	return nil
}

// dropWaiting forgets waiting set w (id): released, or every task ended.
func (s *Scheduler) dropWaiting(id SetID, w *waitingSet) {
	delete(s.waiting, id)
	for _, d := range w.deps {
		if s.waitOn[d.Set]--; s.waitOn[d.Set] <= 0 {
			delete(s.waitOn, d.Set)
		}
	}
}

// HasDependents reports whether a waiting set waits on set id (or a task
// of it): the driver resolves dependencies only after such a set's tasks
// change, so that sets nobody waits on cost nothing.
func (s *Scheduler) HasDependents(id SetID) bool { return s.waitOn[id] > 0 }

// WaitingSets returns the sets that wait for dependencies, by id.
func (s *Scheduler) WaitingSets() []SetID {
	ids := make([]SetID, 0, len(s.waiting))
	for id := range s.waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// whyWaiting answers Why for a task of a waiting set.
func (w *waitingSet) why(ref TaskRef) (WhyAnswer, error) {
	j := w.find(ref.Index)
	if j < 0 {
		return WhyAnswer{}, Errorf(ENOTFOUND, "why: task %d/%d not known to the scheduler", ref.Set, ref.Index)
	}
	st := w.tasks[j].State
	if st == "" {
		st = TaskDisclosed
	}
	a := WhyAnswer{Task: ref, State: st, Reason: WhyDependency, Exact: true, PositionExact: true, AheadExact: true,
		MaxRunning: int(w.maxRun), StartInSeconds: -1, FinishInSeconds: -1}
	if st.Final() {
		a.Reason = WhyNotWaiting
	}
	return a, nil
}

// routeWaiting hands the events about a waiting set (or one disclosed as
// waiting) to applyWaiting; ok is false for every other event.
func (s *Scheduler) routeWaiting(ev Event) (res ApplyResult, err error, ok bool) {
	switch ev.Kind {
	case EventDisclosed, EventRequested, EventCanceled, EventRetried, EventWaitEnded, EventHeld, EventReleased:
	default:
		return ApplyResult{}, nil, false
	}
	w := s.waiting[ev.Set]
	switch {
	case w != nil:
	case ev.Kind == EventDisclosed && len(ev.After) > 0:
		if len(ev.Tasks) == 0 {
			return ApplyResult{}, Errorf(EINVALID, "set %d: a waiting set needs tasks", ev.Set), true
		}
	case ev.Kind == EventWaitEnded:
		return ApplyResult{}, nil, true // not waiting (released already): nothing to do
	default:
		return ApplyResult{}, nil, false
	}
	res, err = s.applyWaiting(ev, w)
	if w := s.waiting[ev.Set]; w != nil && w.closed() {
		s.dropWaiting(ev.Set, w) // every task canceled: nothing will run
	}
	return res, err, true
}

// closed reports whether every task of w is final.
func (w *waitingSet) closed() bool {
	for _, t := range w.tasks {
		if !t.State.Final() {
			return false
		}
	}
	return true
}

func containsIndex(idx []int32, i int32) bool {
	for _, x := range idx {
		if x == i {
			return true
		}
	}
	return false
}
