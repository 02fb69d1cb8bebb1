package sched

import (
	"slices"
	"strconv"
	"strings"
)

// This file is task isolation as the scheduler sees it: which users'
// tasks a worker may run. A worker that isolates tasks (each slot its own
// uid, the task owner's own uid, or user, mount and PID namespaces) runs
// anyone's; a worker that does not runs only the tasks of its bound user,
// because a task there can read the worker's state, its token and the
// other copies' files. The server refuses a worker with neither unless it
// was started to share unisolated workers; such a worker is unbound here.

// The isolation mechanisms a worker may report.
const (
	// IsolationUID: each slot runs copies as its own unprivileged uid.
	IsolationUID = "uid"
	// IsolationOwnerUID: copies run as the Unix user named like the task's
	// owner.
	IsolationOwnerUID = "owner-uid"
	// IsolationNamespaces: copies run in unprivileged user, mount and PID
	// namespaces.
	IsolationNamespaces = "namespaces"
	// IsolationNone: copies run as the worker's own user, beside it.
	IsolationNone = "none"
)

// Isolations lists the mechanisms, strongest first.
var Isolations = []string{IsolationUID, IsolationOwnerUID, IsolationNamespaces, IsolationNone}

// NormalIsolation returns the mechanism a worker's report names: empty is
// IsolationNone; an unknown name is returned as it is (ValidIsolation
// refuses it).
func NormalIsolation(mech string) string {
	if mech == "" {
		return IsolationNone
	}
	return mech
}

// ValidIsolation reports whether mech is one of Isolations (or empty).
func ValidIsolation(mech string) bool {
	switch NormalIsolation(mech) {
	case IsolationUID, IsolationOwnerUID, IsolationNamespaces, IsolationNone:
		return true
	}
	return false
}

// Isolated reports whether mech keeps a task from the worker and from
// other users' tasks, so that the worker may run anyone's tasks.
func Isolated(mech string) bool {
	switch mech {
	case IsolationUID, IsolationOwnerUID, IsolationNamespaces:
		return true
	}
	return false
}

// serves reports whether w may run t's owner's tasks: w is bound to no
// owner, or to t's.
func (w *worker) serves(t *task) bool { return w.bound == "" || w.bound == t.set.owner }

// allows reports whether w may start a copy of t now: it serves t's owner,
// a copy would end before w stops taking copies (workerend.go), and it is
// on t's set's route (route.go).
func (w *worker) allows(t *task) bool { return w.serves(t) && w.timeFits(t) && w.routes(t) }

// bind binds w to owner ("": to none), counting bound workers.
func (s *Scheduler) bind(w *worker, owner string) {
	if w.bound != "" {
		s.nbound--
	}
	w.bound = owner
	if owner != "" {
		s.nbound++
	}
}

// plainFor reports whether any free slot will do for t: it asks for one
// slot and no memory (task.plain), and no worker is bound to an owner.
// Finding no slot for such a task means no slot is free for anyone; with
// bound workers it may mean only that the free slots are other owners',
// and the tasks of other sets still try.
func (s *Scheduler) plainFor(t *task) bool { return t.plain() && s.selective() == 0 }

// bestFor is workerHeap.best for a task that asks for one slot and no
// memory: the worker with the most free slots, not in avoid, that may run
// t. With no worker bound it is best itself; otherwise fit walks the heap
// in the same order, skipping the workers bound to other owners, so that
// binding that excludes no worker changes no decision
// (TestBindingThatExcludesNothingDecidesAlike).
func (s *Scheduler) bestFor(t *task, avoid []*worker) *worker {
	if s.selective() == 0 {
		return s.wheap.best(avoid)
	}
	return s.wheap.fit(avoid, t)
}

// preemptibleFor is the disclosed copy to preempt for t (one slot, no
// memory): the most recently started one (the preempt heap's top) on a
// worker that may run t; nil when there is none.
func (s *Scheduler) preemptibleFor(t *task) *liveCopy {
	c := s.preempt.peek()
	if s.selective() == 0 || c.worker.allows(t) {
		return c
	}
	c = nil
	for _, x := range s.preempt.items {
		if x.worker.allows(t) && (c == nil || copyAfter(x, c)) {
			c = x
		}
	}
	return c
}

// shutOut reports whether workers with slots are up and every one of
// them is bound to another owner than t's.
func (s *Scheduler) shutOut(t *task) bool {
	up := false
	for _, w := range s.wheap.items {
		if w.slots > 0 {
			if w.allows(t) {
				return false
			}
			up = true
		}
	}
	return up
}

// boundDetail says, for Why, that no worker may run owner's tasks and
// whom the workers up run for, by worker id (at most three named).
func (s *Scheduler) boundDetail(owner string) string {
	ws := make([]*worker, 0, len(s.wheap.items))
	for _, w := range s.wheap.items {
		if w.slots > 0 {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b *worker) int { return strings.Compare(string(a.id), string(b.id)) })
	var b strings.Builder
	b.WriteString("no worker may run " + owner + "'s tasks")
	for i, w := range ws {
		if i == 3 {
			b.WriteString(", and " + strconv.Itoa(len(ws)-3) + " more")
			break
		}
		if i == 0 {
			b.WriteString(": worker " + string(w.id) + " runs only " + w.bound + "'s")
		} else {
			b.WriteString(", worker " + string(w.id) + " only " + w.bound + "'s")
		}
	}
	return b.String()
}

// roomFor counts the free slots, and with preempt the preemptible
// disclosed copies, on the workers that may run t (for Why).
func (s *Scheduler) roomFor(t *task, preempt bool) int {
	n := 0
	for _, w := range s.wheap.items {
		if w.allows(t) {
			n += w.free()
		}
	}
	if preempt {
		for _, c := range s.preempt.items {
			if c.worker.allows(t) {
				n++
			}
		}
	}
	return n
}

// ownerShutOut reports whether workers with slots are up and every one of
// them is bound to another owner than owner.
func (s *Scheduler) ownerShutOut(owner string) bool {
	up := false
	for _, w := range s.wheap.items {
		if w.slots > 0 {
			if w.bound == "" || w.bound == owner {
				return false
			}
			up = true
		}
	}
	return up
}
