package sched

import (
	"cmp"
	"slices"
	"strings"
)

// This file is routing: a set may name a pool, a partition or both
// (Route), and its copies then run only on the workers that registered
// under them. A set that names neither runs anywhere, as before.
//
// In the scheduler a routed task is one more resource request: it is not
// plain (task.plain), so it is placed by the worker heap's best-first walk
// (workerHeap.fit) over the workers that allow it (worker.allows checks
// the route), and preempts only disclosed copies on matching workers
// (preemptFor walks the workers that could fit it). Among the tasks that
// can run, the order is Hopper's and GRASS's as for any other task.
//
// No head-of-line blocking: a requested routed task that finds no room
// is set aside, or its job left for this Decide, like any task whose
// resources are missing, so the tasks and sets behind it still start.
// Unlike a multi-slot task it never holds the free slots back from
// disclosed work (blockedOnResources): the slots that free elsewhere are
// of no use to it, and one that frees in its pool goes to it first at the
// next Decide, as requested work is served before disclosed work.

// Route names where a set's copies may run; the zero Route: anywhere. A
// worker's Route is where it is (its pool, its partition).
type Route struct {
	// Pool is the pool's name ("local": the server's own slots).
	Pool string `json:",omitempty"`
	// Partition is the batch system's partition (Slurm's).
	Partition string `json:",omitempty"`
}

// LocalPool is the pool of the slots a server runs itself (batchd serve
// --slots).
const LocalPool = "local"

// MaxRouteLen bounds a pool's and a partition's name.
const MaxRouteLen = 64

// IsZero reports whether r names neither a pool nor a partition.
func (r Route) IsZero() bool { return r.Pool == "" && r.Partition == "" }

// Matches reports whether a worker at where may run copies of a set
// routed r: r names nothing, or the same pool and partition as where for
// each part it names.
func (r Route) Matches(where Route) bool {
	return (r.Pool == "" || r.Pool == where.Pool) && (r.Partition == "" || r.Partition == where.Partition)
}

// String says r for people: "pool gpu", "partition long", "pool gpu,
// partition long", "" for the zero Route.
func (r Route) String() string {
	switch {
	case r.Pool != "" && r.Partition != "":
		return "pool " + r.Pool + ", partition " + r.Partition
	case r.Pool != "":
		return "pool " + r.Pool
	case r.Partition != "":
		return "partition " + r.Partition
	}
	return ""
}

// Validate checks r's names: at most MaxRouteLen bytes of letters,
// digits and ._- each (EINVALID).
func (r Route) Validate() error {
	for _, p := range [2]struct{ what, v string }{{"pool", r.Pool}, {"partition", r.Partition}} {
		if len(p.v) > MaxRouteLen {
			return Errorf(EINVALID, "%s name %q is longer than %d bytes", p.what, p.v, MaxRouteLen)
		}
		if i := strings.IndexFunc(p.v, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
		}); i >= 0 {
			return Errorf(EINVALID, "%s name %q: only letters, digits and ._- may be used", p.what, p.v)
		}
	}
	return nil
}

// routed reports whether t's set names a pool or a partition.
func (t *task) routed() bool { return !t.set.route.IsZero() }

// routes reports whether w may run t's copies by t's set's route.
func (w *worker) routes(t *task) bool { return t.set.route.Matches(w.route) }

// routeOnly reports whether t asks for nothing but its route: one slot,
// no memory, no GPU. When no worker has room for it, none has room for
// any other task of its set (a set's tasks share the route), so the
// caller leaves the set for this Decide rather than try each task.
func (t *task) routeOnly() bool { return t.cpus <= 1 && t.memMB == 0 && t.gpus == 0 }

// routeUp reports whether a worker with slots up is on t's route.
func (s *Scheduler) routeUp(t *task) bool {
	for _, w := range s.wheap.items {
		if w.slots > 0 && w.routes(t) {
			return true
		}
	}
	return false
}

// routeDetail says, for Why, that t waits for a worker on its set's
// route: none up, or all busy.
func (s *Scheduler) routeDetail(t *task, up bool) string {
	d := "waits for a worker in " + t.set.route.String()
	if up {
		return d + " (all busy)"
	}
	return d + " (none registered)"
}

// RouteQueue counts the queued tasks of one route (QueuedByRoute).
type RouteQueue struct {
	Route                Route
	Requested, Disclosed int
}

// QueuedByRoute counts the queued tasks (either class, held ones
// included as the queue lengths count them) whose set's route satisfies
// keep, per route, sorted by pool then partition (O(open sets), asked once
// per pool round).
func (s *Scheduler) QueuedByRoute(keep func(Route) bool) []RouteQueue {
	at := map[Route]int{}
	var out []RouteQueue
	for _, st := range s.sets {
		if (st.rq.len() == 0 && st.dq.len() == 0) || !keep(st.route) {
			continue
		}
		i, ok := at[st.route]
		if !ok {
			i = len(out)
			at[st.route] = i
			out = append(out, RouteQueue{Route: st.route})
		}
		out[i].Requested += st.rq.len()
		out[i].Disclosed += st.dq.len()
	}
	sortRouteQueues(out)
	return out
}

// sortRouteQueues sorts qs by pool, then partition (map order must not
// decide anything).
func sortRouteQueues(qs []RouteQueue) {
	slices.SortFunc(qs, func(a, b RouteQueue) int {
		return cmp.Or(cmp.Compare(a.Route.Pool, b.Route.Pool), cmp.Compare(a.Route.Partition, b.Route.Partition))
	})
}

// HoldsSet reports whether the scheduler holds set id (it forgets a set
// with no open task and no live copy): an event that makes the set anew
// must then carry its route.
func (s *Scheduler) HoldsSet(id SetID) bool { return s.sets[id] != nil }
