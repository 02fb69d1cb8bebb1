package sched

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// A held set starts nothing, disclosed or requested, and Why says held;
// released, it runs.
func TestHoldKeepsTasksFromStarting(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 10)})
	b.apply(Event{Kind: EventHeld, Set: 1})
	b.apply(Event{Kind: EventRequested, Set: 1, Indexes: []int32{1}})
	b.decide(0)
	a, err := b.s.Why(TaskRef{Set: 1, Index: 1}, 0)
	if err != nil || a.Reason != WhyHeld || a.Class != "requested" {
		t.Fatalf("Why = %+v, %v; want held, requested", a, err)
	}
	if st := b.s.Stats(); st.QueuedRequested != 0 || st.QueuedDisclosed != 0 {
		t.Fatalf("held tasks are queued: %+v", st)
	}
	b.apply(Event{Kind: EventReleased, Time: 1, Set: 1, Indexes: []int32{1}})
	b.decide(1, want{DecisionStart, TaskRef{Set: 1, Index: 1}, "requested", ""})
	b.apply(Event{Kind: EventReleased, Time: 2, Set: 1})
	b.decide(2, want{DecisionStart, TaskRef{Set: 1, Index: 0}, "disclosed", ""})
}

// A held task's running copy goes on, and gets no speculative copy; with
// Suspend it is suspended, and resumes on release.
func TestHoldRunningCopies(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{StragglerAfter: 1})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4, CanSuspend: true})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 1)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	ds := b.s.Decide(0)
	if len(ds) != 2 {
		t.Fatalf("Decide = %+v, want two starts", ds)
	}
	b.apply(Event{Kind: EventHeld, Time: 1, Set: 1, Indexes: []int32{0}})
	// Far past its estimate: without the hold task 0 would get a copy.
	for _, d := range b.s.Decide(100) {
		if d.Task.Index == 0 {
			t.Fatalf("held task 0 got %+v", d)
		}
	}
	res := b.apply(Event{Kind: EventHeld, Time: 101, Set: 1, Indexes: []int32{0}, Suspend: true})
	if res.Suspended != 1 {
		t.Fatalf("EventHeld with Suspend suspended %d copies, want 1", res.Suspended)
	}
	got := b.s.Decide(101)
	if i := slices.IndexFunc(got, func(d Decision) bool { return d.Kind == DecisionSuspend && d.Copy == ds[0].Copy && d.Reason == "held" }); i < 0 {
		t.Fatalf("Decide = %+v, want the suspension of copy %d (held)", got, ds[0].Copy)
	}
	a, _ := b.s.Why(TaskRef{Set: 1, Index: 0}, 101)
	if a.Reason != WhyHeld {
		t.Fatalf("Why of a held, suspended task = %s, want held", a.Reason)
	}
	b.apply(Event{Kind: EventReleased, Time: 102, Set: 1})
	got = b.s.Decide(102)
	if i := slices.IndexFunc(got, func(d Decision) bool { return d.Kind == DecisionResume && d.Copy == ds[0].Copy }); i < 0 {
		t.Fatalf("Decide after the release = %+v, want copy %d resumed", got, ds[0].Copy)
	}
}

// A held task restored after a restart stays held.
func TestHoldRestored(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, Held: true}, {Index: 1, State: TaskRequested, Held: true}, {Index: 2}}})
	b.decide(0, want{DecisionStart, TaskRef{Set: 1, Index: 2}, "disclosed", ""})
}

// Random holds and releases (some suspending) inside the random workloads
// keep the invariants; a held task starts no copy while held; once all is
// released and requested, every task ends.
func TestPropertyHold(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 20; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur := workload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				r := rand.New(rand.NewSource(seed))
				d.check = func(d *driver, ds []Decision) {
					checkInvariants(d, ds)
					for _, x := range ds {
						if x.Kind != DecisionStart && x.Kind != DecisionResume {
							continue
						}
						if tk := d.s.sets[x.Task.Set].task(x.Task.Index); tk.held {
							t.Fatalf("seed %d t=%g: held task %v got %+v", seed, d.now, x.Task, x)
						}
					}
				}
				d.before = func(d *driver) {
					if r.Intn(4) != 0 {
						return
					}
					var ids []SetID
					for id := range d.s.sets {
						ids = append(ids, id)
					}
					slices.Sort(ids)
					if len(ids) == 0 {
						return
					}
					id := ids[r.Intn(len(ids))]
					var idx []int32
					if r.Intn(2) == 0 {
						for _, tk := range d.s.sets[id].tasks {
							if tk != nil && r.Intn(3) == 0 {
								idx = append(idx, tk.index)
							}
						}
						if idx == nil {
							return
						}
					}
					kind := EventHeld
					if r.Intn(2) == 0 {
						kind = EventReleased
					}
					d.apply(Event{Kind: kind, Set: id, Indexes: idx, Suspend: r.Intn(2) == 0})
				}
				playScript(d, script, math.Inf(1))
				d.run(5000)
				d.before = nil
				var ids []SetID
				for id := range d.s.sets {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				d.now++
				for _, id := range ids {
					d.apply(Event{Kind: EventReleased, Set: id})
					d.apply(Event{Kind: EventRequested, Set: id})
				}
				d.decide()
				d.run(50000)
				if st := d.s.Stats(); st.RunningCopies != 0 || st.QueuedRequested != 0 || st.BusySlots != 0 || len(d.s.sets) != 0 {
					t.Fatalf("seed %d: after release and request everything: %+v, %d sets open", seed, st, len(d.s.sets))
				}
			}
		})
	}
}

// Changing the cap of a set the scheduler forgot (all its tasks ended)
// is no error: nothing of it runs.
func TestCapOfForgottenSet(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventDisclosed, Set: 9, MaxRunning: 3})
	b.apply(Event{Kind: EventDisclosed, Set: 9, MaxRunning: NoMaxRunning})
	if len(b.s.sets) != 0 {
		t.Fatalf("a cap alone made a set: %d held", len(b.s.sets))
	}
}

// A hold naming tasks the scheduler no longer holds (ended, their set
// forgotten and made anew) holds the others and is no error.
func TestHoldSkipsEndedTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 5}, {Index: 6}}})
	b.apply(Event{Kind: EventHeld, Set: 1, Indexes: []int32{0, 5}})
	b.apply(Event{Kind: EventHeld, Set: 2})
	if !b.s.sets[1].task(5).held || b.s.sets[1].task(6).held {
		t.Fatalf("task 5 held %v, task 6 held %v; want only 5", b.s.sets[1].task(5).held, b.s.sets[1].task(6).held)
	}
	b.apply(Event{Kind: EventReleased, Set: 1, Indexes: []int32{0, 5}})
	if b.s.sets[1].task(5).held {
		t.Fatalf("task 5 still held after release")
	}
}

// A held task that ends and is retried stays held, whether the scheduler
// still holds it or queues it anew.
func TestHeldAcrossRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 1)})
	b.apply(Event{Kind: EventHeld, Set: 1})
	b.apply(Event{Kind: EventCanceled, Set: 1, Indexes: []int32{0}})
	b.apply(Event{Kind: EventRetried, Set: 1, Tasks: []TaskInfo{{Index: 0, State: TaskRequested, Held: true}}})
	b.apply(Event{Kind: EventRetried, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0, State: TaskRequested, Held: true}}})
	b.decide(1)
	b.apply(Event{Kind: EventReleased, Time: 2, Set: 2})
	b.decide(2, want{DecisionStart, TaskRef{Set: 2, Index: 0}, "requested", ""})
}
