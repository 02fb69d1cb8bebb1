package sched

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// startsOf returns the starts among ds, by task, with their workers.
func startsOf(ds []Decision) map[TaskRef]WorkerID {
	out := map[TaskRef]WorkerID{}
	for _, x := range ds {
		if x.Kind == DecisionStart {
			out[x.Task] = x.Slot.Worker
		}
	}
	return out
}

// TestBoundWorkers: a worker bound to one owner runs only that owner's
// tasks, requested or disclosed, and never preempts for another owner;
// Why names the binding when it is what a task waits for; a copy of
// another owner cannot be attached to a bound worker.
func TestBoundWorkers(t *testing.T) {
	t.Parallel()
	task := func(n int) []TaskInfo { return tasksWithEstimate(n, 10) }
	cases := []struct {
		name    string
		workers []Event // EventWorkerUp
		events  []Event // after the workers
		want    map[TaskRef]WorkerID
		why     map[TaskRef]string // a task's Why: its Detail, or its reason
	}{
		{
			name:    "requested work of another owner waits",
			workers: []Event{{Worker: "wb", Slots: 2, BoundUser: "bob"}},
			events: []Event{
				{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(2)}, {Kind: EventRequested, Set: 1},
				{Kind: EventDisclosed, Set: 2, Owner: "bob", Tasks: task(1)}, {Kind: EventRequested, Set: 2},
			},
			want: map[TaskRef]WorkerID{{2, 0}: "wb"},
			why:  map[TaskRef]string{{1, 0}: "no worker may run alice's tasks: worker wb runs only bob's"},
		},
		{
			name:    "disclosed work of another owner waits",
			workers: []Event{{Worker: "wb", Slots: 2, BoundUser: "bob"}},
			events:  []Event{{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(2)}},
			want:    map[TaskRef]WorkerID{},
			why:     map[TaskRef]string{{1, 1}: "no worker may run alice's tasks: worker wb runs only bob's"},
		},
		{
			name:    "an isolated worker runs anyone's; the bound one its owner's",
			workers: []Event{{Worker: "wa", Slots: 1}, {Worker: "wb", Slots: 3, BoundUser: "bob"}},
			events: []Event{
				{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(2)}, {Kind: EventRequested, Set: 1},
				{Kind: EventDisclosed, Set: 2, Owner: "bob", Tasks: task(1)}, {Kind: EventRequested, Set: 2},
			},
			want: map[TaskRef]WorkerID{{1, 0}: "wa", {2, 0}: "wb"},
			why:  map[TaskRef]string{{1, 1}: string(WhyNoFreeSlot)},
		},
		{
			name:    "the bound owner's own work runs beside the others'",
			workers: []Event{{Worker: "wa", Slots: 1}, {Worker: "wb", Slots: 1, BoundUser: "bob"}},
			events: []Event{
				{Kind: EventDisclosed, Set: 2, Owner: "bob", Tasks: task(2)}, {Kind: EventRequested, Set: 2},
			},
			want: map[TaskRef]WorkerID{{2, 0}: "wa", {2, 1}: "wb"},
		},
		{
			name:    "several bound workers are named",
			workers: []Event{{Worker: "w1", Slots: 1, BoundUser: "bob"}, {Worker: "w2", Slots: 1, BoundUser: "carol"}},
			events:  []Event{{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(1)}, {Kind: EventRequested, Set: 1}},
			want:    map[TaskRef]WorkerID{},
			why:     map[TaskRef]string{{1, 0}: "no worker may run alice's tasks: worker w1 runs only bob's, worker w2 only carol's"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, Config{})
			d.dur = func(TaskRef, int, bool) float64 { return 10 }
			for _, w := range tc.workers {
				w.Kind = EventWorkerUp
				d.apply(w)
			}
			for _, ev := range tc.events {
				d.apply(ev)
			}
			got := startsOf(d.decide())
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("starts %v, want %v", got, tc.want)
			}
			for ref, want := range tc.why {
				a, err := d.s.Why(ref, d.now)
				if err != nil {
					t.Fatal(err)
				}
				if got := a.Detail; got != want && string(a.Reason) != want {
					t.Errorf("Why(%v) = %s %q, want %q", ref, a.Reason, got, want)
				}
			}
		})
	}

	t.Run("no preemption for another owner", func(t *testing.T) {
		d := newDriver(t, Config{Speculation: SpecNone})
		d.dur = func(TaskRef, int, bool) float64 { return 10 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "wb", Slots: 1, CanSuspend: true, BoundUser: "bob"})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "bob", Tasks: task(1)})
		if got := startsOf(d.decide()); got[TaskRef{1, 0}] != "wb" {
			t.Fatalf("bob's disclosed task: %v", got)
		}
		d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "alice", Tasks: task(1)})
		d.apply(Event{Kind: EventRequested, Set: 2})
		if ds := d.decide(); len(ds) != 0 {
			t.Fatalf("alice's requested task on bob's worker: %v", ds)
		}
		d.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "bob", Tasks: task(1)})
		d.apply(Event{Kind: EventRequested, Set: 3})
		ds := d.decide()
		if len(ds) != 2 || ds[0].Kind != DecisionSuspend || ds[1].Kind != DecisionStart || ds[1].Task != (TaskRef{3, 0}) {
			t.Fatalf("bob's requested task should preempt his disclosed copy: %v", ds)
		}
	})

	t.Run("fair share: a user no worker may serve holds nobody back", func(t *testing.T) {
		d := newDriver(t, Config{FairShare: true, DisclosedFairShare: true})
		d.dur = func(TaskRef, int, bool) float64 { return 10 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "wb", Slots: 2, BoundUser: "bob"})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(2)})
		d.apply(Event{Kind: EventRequested, Set: 1})
		d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "bob", Tasks: task(2)})
		d.apply(Event{Kind: EventRequested, Set: 2})
		got := startsOf(d.decide())
		if len(got) != 2 || got[TaskRef{2, 0}] != "wb" || got[TaskRef{2, 1}] != "wb" {
			t.Fatalf("starts %v, want both of bob's tasks on wb", got)
		}
	})

	t.Run("attach refused", func(t *testing.T) {
		d := newDriver(t, Config{})
		d.apply(Event{Kind: EventWorkerUp, Worker: "wb", Slots: 1, BoundUser: "bob"})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "alice", Tasks: task(1)})
		_, err := d.s.Apply(Event{Kind: EventCopyAttached, Copy: 1, Task: TaskRef{1, 0}, Slot: SlotRef{Worker: "wb", Slot: 0}})
		if ErrorCode(err) != EPERMISSION {
			t.Fatalf("attach alice's copy to bob's worker: %v, want %s", err, EPERMISSION)
		}
	})
}

// boundWorkload is workload with owners u0 and u1 and each worker bound
// (or not) at random, w0 unbound on odd seeds; w2 is bound to u1 on even
// seeds and w0 to u0, so that each owner has a worker.
func boundWorkload(seed int64) ([]scripted, func(TaskRef, int, bool) float64, map[WorkerID]string) {
	script, dur := workload(seed)
	r := rand.New(rand.NewSource(seed ^ 0xb0d))
	bound := map[WorkerID]string{"w0": "", "w1": []string{"", "u0", "u1"}[r.Intn(3)], "w2": ""}
	if seed%2 == 0 {
		bound["w0"], bound["w2"] = "u0", "u1"
	}
	for i := range script {
		if ev := &script[i].ev; ev.Kind == EventWorkerUp {
			ev.BoundUser = bound[ev.Worker]
		}
	}
	return script, dur, bound
}

// TestPropertyBoundWorkers: over random workloads with bound workers, no
// copy ever runs on a worker bound to another owner, and every task still
// ends (each owner has a worker).
func TestPropertyBoundWorkers(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur, bound := boundWorkload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.progress = seed%2 == 0
				d.check = func(d *driver, _ []Decision) {
					for _, c := range d.live {
						if b := bound[c.slot.Worker]; b != "" && b != d.owners[c.ref.Set] {
							d.t.Fatalf("seed %d t=%g: %s's task %v runs on worker %s, bound to %s", seed, d.now, d.owners[c.ref.Set], c.ref, c.slot.Worker, b)
						}
					}
				}
				playScript(d, script, math.Inf(1))
				d.run(10000)
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.final() {
							t.Fatalf("seed %d: task %v of %s ended in state %s", seed, tk.ref(), st.owner, toTaskState(tk.state))
						}
					}
				}
			}
		})
	}
}

// TestBindingThatExcludesNothingDecidesAlike: with one owner, every worker
// bound to that owner decides exactly as every worker unbound (the
// scheduler without binding), over random workloads and every property
// configuration: binding changes where a task may go, nothing else.
func TestBindingThatExcludesNothingDecidesAlike(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				var logs [2]string
				for k, owner := range []string{"", "u"} {
					cfg := cfg
					cfg.Seed = seed
					script, dur := workload(seed)
					for i := range script {
						ev := &script[i].ev
						switch ev.Kind {
						case EventDisclosed:
							ev.Owner = "u"
						case EventWorkerUp:
							ev.BoundUser = owner
						}
					}
					d := newDriver(t, cfg)
					d.dur = dur
					d.tick = 1
					d.progress = seed%2 == 0
					playScript(d, script, math.Inf(1))
					d.run(10000)
					logs[k] = d.logString()
				}
				if logs[0] != logs[1] {
					t.Fatalf("seed %d: workers bound to the only owner decided otherwise than unbound ones:\n%s", seed, firstDiff(logs[0], logs[1]))
				}
			}
		})
	}
}

// firstDiff returns the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  unbound: %s\n  bound:   %s", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(la), len(lb))
}
