package sched

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// resourceWorkload is cappedWorkload with resource requests: workers of 2
// to 4 slots advertising 2 GiB (w1 comes back with 2 slots and 2 GiB),
// and about a third of the tasks asking for 2 slots or for 512 MiB to
// 1.5 GiB.
func resourceWorkload(seed int64) ([]scripted, func(TaskRef, int, bool) float64, map[SetID]int, map[TaskRef]TaskInfo) {
	script, dur, caps := cappedWorkload(seed)
	r := rand.New(rand.NewSource(seed ^ 0x7e5))
	need := map[TaskRef]TaskInfo{}
	for i := range script {
		ev := &script[i].ev
		switch ev.Kind {
		case EventWorkerUp:
			ev.Slots = max(ev.Slots, 2)
			ev.MemoryMB = 2048
		case EventDisclosed:
			for k := range ev.Tasks {
				ti := &ev.Tasks[k]
				switch r.Intn(6) {
				case 0:
					ti.Cpus = 2
				case 1:
					ti.MemoryMB = int64(512 * (1 + r.Intn(3)))
				}
				need[TaskRef{ev.Set, ti.Index}] = *ti
			}
		}
	}
	return script, dur, caps, need
}

// TestPropertyResources: over the capped random workloads with resource
// requests, no worker ever runs copies asking for more slots or memory than
// it has, caps hold, and every task still ends (a task asking for room
// does not starve behind disclosed work, and does not block other sets).
func TestPropertyResources(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur, caps, need := resourceWorkload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.progress = seed%2 == 0
				capCheck := checkCaps(caps, false)
				d.check = func(d *driver, ds []Decision) {
					capCheck(d, ds)
					slots, mem := map[WorkerID]int{}, map[WorkerID]int64{}
					for _, c := range d.live {
						n := need[c.ref]
						// A suspended copy keeps its memory, not its slots.
						mem[c.slot.Worker] += n.MemoryMB
						if !c.paused {
							slots[c.slot.Worker] += max(int(n.Cpus), 1)
						}
					}
					for id, w := range d.s.workers {
						if slots[id] > int(w.slots) || mem[id] > w.memMB {
							d.t.Fatalf("seed %d t=%g: worker %s runs copies asking for %d slots and %d MiB; it has %d and %d",
								seed, d.now, id, slots[id], mem[id], w.slots, w.memMB)
						}
					}
				}
				playScript(d, script, math.Inf(1))
				d.run(10000)
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.final() {
							t.Fatalf("seed %d: task %v (cpus %d, %d MiB) ended in state %s", seed, tk.ref(), tk.cpus, tk.memMB, toTaskState(tk.state))
						}
					}
				}
			}
		})
	}
}

// TestResourceExample: a worker of 4 slots and 1 GiB. A 3-cpu task and a
// 768 MiB task: the 3-cpu task takes three slots; the memory task the
// fourth; a second 768 MiB task waits for memory, and Why says so; for a
// task asking for more than any worker has, Why says no worker fits.
func TestResourceExample(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.dur = func(TaskRef, int, bool) float64 { return 10 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4, MemoryMB: 1024})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{
		{Index: 0, Cpus: 3, EstimateSeconds: 10},
		{Index: 1, MemoryMB: 768, EstimateSeconds: 10},
		{Index: 2, MemoryMB: 768, EstimateSeconds: 10},
		{Index: 3, Cpus: 8, EstimateSeconds: 10},
	}})
	d.apply(Event{Kind: EventRequested, Set: 1})
	ds := d.decide()
	started := map[int32]bool{}
	for _, x := range ds {
		if x.Kind == DecisionStart {
			started[x.Task.Index] = true
		}
	}
	if !started[0] || !started[1] || started[2] || started[3] || len(ds) != 2 {
		t.Fatalf("decisions %v; want starts of tasks 0 and 1 only", ds)
	}
	if st := d.s.Stats(); st.BusySlots != 4 {
		t.Fatalf("busy slots %d, want 4 (3 + 1)", st.BusySlots)
	}
	for i, want := range map[int32]WhyReason{2: WhyResources, 3: WhyNeverFits} {
		a, err := d.s.Why(TaskRef{1, i}, d.now)
		if err != nil || a.Reason != want {
			t.Fatalf("Why(1/%d) = %v, %v; want %s", i, a.Reason, err, want)
		}
	}
	d.run(1000)
	if got := len(d.finished); got != 3 {
		t.Fatalf("%d tasks finished, want 3 (the 8-cpu task fits no worker)", got)
	}
}

// TestAttachOnAnExtraSlot: after a restart, copies re-attach in id order.
// A 2-cpu copy on slot 0 takes slot 1 as its extra; a copy that runs on
// slot 1 then re-attaches: the extra moves to slot 2 (and, with no slot
// left, is given up) rather than the re-attach failing, which would kill a
// healthy copy.
func TestAttachOnAnExtraSlot(t *testing.T) {
	t.Parallel()
	for _, slots := range []int32{3, 2} {
		s, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		apply := func(ev Event) {
			t.Helper()
			if _, err := s.Apply(ev); err != nil {
				t.Fatalf("%d slots: Apply(%+v): %v", slots, ev, err)
			}
		}
		apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: slots})
		apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, Cpus: 2}, {Index: 1}}})
		apply(Event{Kind: EventCopyAttached, Copy: 1, Task: TaskRef{1, 0}, Slot: SlotRef{"w", 0}})
		apply(Event{Kind: EventCopyAttached, Copy: 2, Task: TaskRef{1, 1}, Slot: SlotRef{"w", 1}})
		st := s.Stats()
		want := min(int(slots), 3)
		if st.BusySlots != want || st.RunningCopies != 2 || s.freeN != int(slots)-want {
			t.Fatalf("%d slots: busy %d, running %d, free %d; want %d busy, 2 running", slots, st.BusySlots, st.RunningCopies, s.freeN, want)
		}
		w := s.workers["w"]
		if w.busy[1].id != 2 || w.busy[0].id != 1 {
			t.Fatalf("%d slots: slot 0 holds %d, slot 1 holds %d", slots, w.busy[0].id, w.busy[1].id)
		}
	}
}

// TestResourcePreemption: a worker of 2 slots busy with two disclosed
// copies; a requested 2-cpu task suspends both and starts. With a memory
// request and suspension, suspending frees no memory: a requested task
// asking for the memory the disclosed copies hold waits (and disclosed
// work takes no slot meanwhile); with kill preemption it gets it.
func TestResourcePreemption(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.dur = func(TaskRef, int, bool) float64 { return 100 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2, CanSuspend: true, MemoryMB: 1000})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 100)})
	d.decide()
	d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0, Cpus: 2}}})
	d.apply(Event{Kind: EventRequested, Set: 2})
	ds := d.decide()
	kinds := map[DecisionKind]int{}
	for _, x := range ds {
		kinds[x.Kind]++
	}
	if kinds[DecisionSuspend] != 2 || kinds[DecisionStart] != 1 {
		t.Fatalf("decisions %v; want two suspends and the 2-cpu start", ds)
	}

	for _, tc := range []struct {
		pre     Preemption
		started bool
	}{{PreemptSuspend, false}, {PreemptKill, true}} {
		d := newDriver(t, Config{Preemption: tc.pre})
		d.dur = func(TaskRef, int, bool) float64 { return 100 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4, CanSuspend: true, MemoryMB: 1000})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, MemoryMB: 800, EstimateSeconds: 100}}})
		d.decide()
		d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0, MemoryMB: 500}}})
		d.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: tasksWithEstimate(1, 100)})
		d.apply(Event{Kind: EventRequested, Set: 2})
		ds := d.decide()
		started := map[SetID]bool{}
		for _, x := range ds {
			if x.Kind == DecisionStart {
				started[x.Task.Set] = true
			}
		}
		// Started, nothing waits and set 3 runs too; waiting, disclosed
		// work is held back so that memory and slots free up for it.
		if started[2] != tc.started || started[3] != tc.started {
			t.Errorf("preemption %s: started %v; want the memory task and the disclosed set 3 started: %v", tc.pre, started, tc.started)
		}
	}
}

// TestWhyNoWorkerAndNeverFits: with no worker up, Why says so and gives
// no ETA; a 3-cpu task that a 4-slot worker could hold becomes impossible
// when that worker leaves and only a 2-slot one is up: Why says no worker
// fits, with no ETA, and Capacity names the largest worker.
func TestWhyNoWorkerAndNeverFits(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, Cpus: 3, EstimateSeconds: 10}, {Index: 1, EstimateSeconds: 10}}})
	d.apply(Event{Kind: EventRequested, Set: 1})
	for _, i := range []int32{0, 1} {
		if a, err := d.s.Why(TaskRef{1, i}, d.now); err != nil || a.Reason != WhyNoWorker || a.StartInSeconds >= 0 {
			t.Fatalf("no worker: Why(1/%d) = %+v, %v; want %s with no ETA", i, a, err, WhyNoWorker)
		}
	}
	if c := d.s.Capacity(); c.Workers != 0 || !c.Holds(Need{Cpus: 64, MemMB: 1 << 20, GPUs: 8}) {
		t.Fatalf("no worker: %+v; want none, holding anything", c)
	}
	d.apply(Event{Kind: EventWorkerUp, Worker: "big", Slots: 4, MemoryMB: 1024})
	d.apply(Event{Kind: EventWorkerUp, Worker: "busy", Slots: 1, MemoryMB: 1024})
	d.apply(Event{Kind: EventWorkerDown, Worker: "big"})
	d.apply(Event{Kind: EventWorkerUp, Worker: "small", Slots: 2, MemoryMB: 512})
	a, err := d.s.Why(TaskRef{1, 0}, d.now)
	if err != nil || a.Reason != WhyNeverFits || a.StartInSeconds >= 0 || a.FinishInSeconds >= 0 {
		t.Fatalf("after the big worker left: Why(1/0) = %+v, %v; want %s with no ETA", a, err, WhyNeverFits)
	}
	c := d.s.Capacity()
	if c.Workers != 2 || c.MaxSlots != 2 || c.MaxMemoryMB != 1024 || c.Holds(Need{Cpus: 3}) || !c.Holds(Need{Cpus: 2, MemMB: 1024}) || c.Holds(Need{Cpus: 1, MemMB: 2048}) {
		t.Fatalf("capacity %+v; want 2 workers, at most 2 slots and 1024 MiB", c)
	}
	if err := c.Refuse(Need{Cpus: 3}); ErrorCode(err) != EFAILEDPRECONDITION || !strings.Contains(ErrorMessage(err), "2 slots and 1 GiB") {
		t.Errorf("Refuse(3 cpus): %v; want FailedPrecondition naming 2 slots and 1 GiB", err)
	}
	// A pool whose largest pilot has 4 slots holds the 3-cpu task, and
	// memory is not held against the workers while it reports.
	c.Pool, c.PilotSlots = true, 4
	if !c.Holds(Need{Cpus: 3, MemMB: 4096}) || c.Holds(Need{Cpus: 5}) {
		t.Errorf("with a pool of 4-slot pilots: %+v", c)
	}
}
