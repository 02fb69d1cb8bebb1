package sched

import (
	"strings"
	"testing"
)

// routeConfigs are the requested-class pipelines a routed task goes
// through: Hopper with GRASS (the default), greedy without speculation,
// GRASS alone, cloning, and fair share between users.
var routeConfigs = []struct {
	name string
	cfg  Config
}{
	{"hopper", Config{}},
	{"greedy", Config{Speculation: SpecNone}},
	{"grass", Config{Speculation: SpecGRASS}},
	{"clone", Config{Speculation: SpecClone}},
	{"fair", Config{FairShare: true}},
}

// tasks returns n TaskInfos with indexes 0..n-1.
func routeTasks(n int) []TaskInfo {
	ts := make([]TaskInfo, n)
	for i := range ts {
		ts[i] = TaskInfo{Index: int32(i), EstimateSeconds: 10}
	}
	return ts
}

// startsOn maps each started copy's task to its worker.
func startsOn(ds []Decision) map[TaskRef]WorkerID {
	out := map[TaskRef]WorkerID{}
	for _, d := range ds {
		if d.Kind == DecisionStart {
			out[d.Task] = d.Slot.Worker
		}
	}
	return out
}

func TestRouteMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		set, worker Route
		want        bool
	}{
		{Route{}, Route{}, true},
		{Route{}, Route{Pool: "gpu", Partition: "long"}, true},
		{Route{Pool: "gpu"}, Route{}, false},
		{Route{Pool: "gpu"}, Route{Pool: "gpu", Partition: "long"}, true},
		{Route{Pool: "gpu"}, Route{Pool: "cpu"}, false},
		{Route{Partition: "long"}, Route{Pool: "slurm", Partition: "long"}, true},
		{Route{Partition: "long"}, Route{Pool: "slurm", Partition: "short"}, false},
		{Route{Pool: "slurm", Partition: "long"}, Route{Pool: "slurm", Partition: "short"}, false},
		{Route{Pool: "slurm", Partition: "long"}, Route{Pool: "other", Partition: "long"}, false},
	} {
		if got := c.set.Matches(c.worker); got != c.want {
			t.Errorf("%+v.Matches(%+v) = %v, want %v", c.set, c.worker, got, c.want)
		}
	}
	for _, bad := range []Route{{Pool: "a b"}, {Partition: "x;y"}, {Pool: strings.Repeat("p", MaxRouteLen+1)}} {
		if err := bad.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("%+v.Validate() = %v, want EINVALID", bad, err)
		}
	}
}

// A routed set's copies start only on the workers of its pool, in every
// pipeline; an unrouted set's anywhere.
func TestRouteStartsOnlyOnMatchingWorkers(t *testing.T) {
	t.Parallel()
	for _, rc := range routeConfigs {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, rc.cfg)
			b.apply(Event{Kind: EventWorkerUp, Worker: "a1", Slots: 2, Route: Route{Pool: "a"}})
			b.apply(Event{Kind: EventWorkerUp, Worker: "b1", Slots: 2, Route: Route{Pool: "b"}})
			b.apply(Event{Kind: EventWorkerUp, Worker: "n1", Slots: 2})
			b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(6), Route: Route{Pool: "a"}})
			b.apply(Event{Kind: EventRequested, Set: 1})
			ds := b.s.Decide(0)
			on := startsOn(ds)
			if len(on) != 2 {
				t.Fatalf("started %v, want the 2 slots of pool a", on)
			}
			for ref, w := range on {
				if w != "a1" {
					t.Errorf("task %v of the set routed to pool a started on %s", ref, w)
				}
			}
			// An unrouted set takes the rest, whichever pool.
			b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(4)})
			b.apply(Event{Kind: EventRequested, Set: 2})
			on = startsOn(b.s.Decide(1))
			seen := map[WorkerID]int{}
			for ref, w := range on {
				if ref.Set != 2 {
					t.Errorf("task %v started with pool a full: %v", ref, on)
				}
				seen[w]++
			}
			if seen["b1"] != 2 || seen["n1"] != 2 {
				t.Errorf("unrouted set started on %v, want 2 on b1 and 2 on n1", seen)
			}
		})
	}
}

// No head-of-line blocking: a requested set routed to a pool with no
// worker, or with every worker busy, stops neither the requested sets
// behind it nor disclosed work from using the free slots elsewhere.
func TestRouteNoHeadOfLineBlocking(t *testing.T) {
	t.Parallel()
	for _, rc := range routeConfigs {
		for _, busy := range []bool{false, true} {
			name := rc.name + "/absent"
			if busy {
				name = rc.name + "/busy"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, rc.cfg)
				b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
				if busy {
					b.apply(Event{Kind: EventWorkerUp, Worker: "x", Slots: 1, Route: Route{Pool: "x"}})
					b.apply(Event{Kind: EventDisclosed, Set: 9, Owner: "v", Tasks: routeTasks(1), Route: Route{Pool: "x"}})
					b.apply(Event{Kind: EventRequested, Set: 9})
					if on := startsOn(b.s.Decide(0)); on[TaskRef{9, 0}] != "x" {
						t.Fatalf("filler started %v, want on x", on)
					}
				}
				// The routed set comes first: smallest and oldest.
				b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(3), Route: Route{Pool: "x"}})
				b.apply(Event{Kind: EventRequested, Set: 1})
				b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(2)})
				b.apply(Event{Kind: EventRequested, Set: 2})
				b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: routeTasks(5)})
				ds := b.s.Decide(1)
				var starts, req, disc int
				for _, d := range ds {
					if d.Kind != DecisionStart {
						continue
					}
					starts++
					switch d.Task.Set {
					case 1:
						t.Errorf("routed task %v started with no free worker in its pool", d.Task)
					case 2:
						req++
					case 3:
						disc++
					}
				}
				// Cloning gives the free slots to clones of set 2's
				// tasks rather than to disclosed work: either way, all
				// four are used.
				if starts != 4 || req < 2 || (rc.cfg.Speculation != SpecClone && disc != 2) {
					t.Errorf("started %+v: %d requested and %d disclosed, want set 2's 2 tasks and all 4 free slots used", ds, req, disc)
				}
				a, err := b.s.Why(TaskRef{1, 0}, 1)
				if err != nil {
					t.Fatal(err)
				}
				want := "waits for a worker in pool x (none registered)"
				if busy {
					want = "waits for a worker in pool x (all busy)"
				}
				if a.Reason != WhyRoute || a.Detail != want {
					t.Errorf("Why = %s %q, want %s %q", a.Reason, a.Detail, WhyRoute, want)
				}
			})
		}
	}
}

// A routed task starts as soon as its pool's worker registers, and its
// place among the matching jobs is Hopper's order: the smaller job first.
func TestRouteKeepsOrderAmongMatching(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(5), Route: Route{Pool: "p"}})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(2), Route: Route{Pool: "p"}})
	b.apply(Event{Kind: EventRequested, Set: 2})
	if on := startsOn(b.s.Decide(0)); len(on) != 0 {
		t.Fatalf("started %v with no worker in pool p", on)
	}
	b.apply(Event{Kind: EventWorkerUp, Time: 1, Worker: "p1", Slots: 2, Route: Route{Pool: "p"}})
	on := startsOn(b.s.Decide(1))
	if len(on) != 2 || on[TaskRef{2, 0}] != "p1" || on[TaskRef{2, 1}] != "p1" {
		t.Errorf("started %v, want set 2's two tasks (the smaller job, SRPT) on p1", on)
	}
}

// Preemption for a routed requested task suspends only disclosed copies
// on its pool's workers, never those elsewhere.
func TestRoutePreemptsOnlyMatchingSlots(t *testing.T) {
	t.Parallel()
	for _, rc := range routeConfigs {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, rc.cfg)
			b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 1, CanSuspend: true})
			b.apply(Event{Kind: EventWorkerUp, Worker: "p", Slots: 1, CanSuspend: true, Route: Route{Pool: "p"}})
			b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(2)})
			on := startsOn(b.s.Decide(0))
			if len(on) != 2 {
				t.Fatalf("disclosed started %v, want both slots", on)
			}
			b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(1), Route: Route{Pool: "p"}})
			b.apply(Event{Kind: EventRequested, Set: 2})
			ds := b.s.Decide(1)
			var preempted []WorkerID
			for _, d := range ds {
				if d.Kind == DecisionSuspend || d.Kind == DecisionKill {
					preempted = append(preempted, d.Slot.Worker)
				}
			}
			if len(preempted) != 1 || preempted[0] != "p" {
				t.Errorf("preempted on %v, want only on p: %+v", preempted, ds)
			}
			if got := startsOn(ds)[TaskRef{2, 0}]; got != "p" {
				t.Errorf("routed task started on %q, want p: %+v", got, ds)
			}
		})
	}
}

// Partitions route like pools; a set naming both needs both.
func TestRoutePartition(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "short", Slots: 1, Route: Route{Pool: "slurm", Partition: "short"}})
	b.apply(Event{Kind: EventWorkerUp, Worker: "long", Slots: 1, Route: Route{Pool: "slurm", Partition: "long"}})
	b.apply(Event{Kind: EventWorkerUp, Worker: "other", Slots: 1, Route: Route{Pool: "other", Partition: "long"}})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(3), Route: Route{Pool: "slurm", Partition: "long"}})
	b.apply(Event{Kind: EventRequested, Set: 1})
	on := startsOn(b.s.Decide(0))
	if len(on) != 1 || on[TaskRef{1, 0}] != "long" {
		t.Errorf("started %v, want task 0 on long only", on)
	}
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(3), Route: Route{Partition: "long"}})
	b.apply(Event{Kind: EventRequested, Set: 2})
	on = startsOn(b.s.Decide(1))
	if len(on) != 1 || on[TaskRef{2, 0}] != "other" {
		t.Errorf("started %v, want set 2's task 0 on other (partition long, any pool)", on)
	}
}

// A retried task of a set the scheduler forgot keeps its route: the
// event that makes the set anew carries it.
func TestRouteRetriedSetKeepsRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
	b.apply(Event{Kind: EventWorkerUp, Worker: "p", Slots: 1, Route: Route{Pool: "p"}})
	b.apply(Event{Kind: EventRetried, Set: 7, Owner: "u", Route: Route{Pool: "p"},
		Tasks: []TaskInfo{{Index: 0, State: TaskRequested}, {Index: 1, State: TaskRequested}}})
	on := startsOn(b.s.Decide(0))
	if len(on) != 1 || on[TaskRef{7, 0}] != "p" {
		t.Errorf("started %v, want task 0 on p only", on)
	}
}

// QueuedByRoute counts the queued tasks per route, in route order, and
// leaves out what keep refuses.
func TestQueuedByRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: routeTasks(3), Route: Route{Pool: "slurm", Partition: "long"}})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: routeTasks(2)})
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: routeTasks(4), Route: Route{Pool: "gpu"}})
	b.apply(Event{Kind: EventRequested, Set: 3})
	got := b.s.QueuedByRoute(func(r Route) bool { return r.Pool == "" || r.Pool == "slurm" })
	want := []RouteQueue{{Route{}, 0, 2}, {Route{Pool: "slurm", Partition: "long"}, 3, 0}}
	if len(got) != len(want) {
		t.Fatalf("QueuedByRoute = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("QueuedByRoute[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Preemptive SRPT takes a requested copy's slot for a shorter routed
// task only on the routed task's pool: a longer copy elsewhere is left
// alone.
func TestRoutePreemptRequestedOnlyOnRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone, PreemptRequested: true})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
	b.apply(Event{Kind: EventWorkerUp, Worker: "p", Slots: 1, CanSuspend: true, Route: Route{Pool: "p"}})
	long := []TaskInfo{{Index: 0, EstimateSeconds: 1000}}
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: long})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 500}}, Route: Route{Pool: "p"}})
	b.apply(Event{Kind: EventRequested, Set: 2})
	if on := startsOn(b.s.Decide(0)); on[TaskRef{1, 0}] != "w" || on[TaskRef{2, 0}] != "p" {
		t.Fatalf("started %v, want set 1 on w and set 2 on p", on)
	}
	// A short routed task: the long copy on w is the SRPT victim, but
	// its slot is off the route; the copy on p needs less than it does.
	b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 3, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 1}}, Route: Route{Pool: "p"}})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 3})
	for _, d := range b.s.Decide(1) {
		if (d.Kind == DecisionSuspend || d.Kind == DecisionKill) && d.Slot.Worker == "w" {
			t.Errorf("preempted %v on w, off the routed task's pool", d.Task)
		}
		if d.Kind == DecisionStart && d.Task == (TaskRef{3, 0}) && d.Slot.Worker != "p" {
			t.Errorf("routed task started on %s", d.Slot.Worker)
		}
	}
}
