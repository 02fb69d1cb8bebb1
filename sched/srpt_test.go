package sched

import (
	"fmt"
	"math"
	"testing"
)

// Preemptive SRPT in the requested class: a shorter requested job that
// finds no free slot suspends the requested copy with the most work left;
// that copy resumes on its own worker when the shorter work is done, not
// on another worker's free slot. Without the option nothing moves.
func TestPreemptRequested(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, on bool) {
		b := setup(t, Config{Speculation: SpecNone, PreemptRequested: on})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w0", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w1", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 100)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		a := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "w0"})[0].Copy
		b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(1, 50)})
		b.apply(Event{Kind: EventRequested, Set: 2})
		c := b.decide(0, want{DecisionStart, TaskRef{2, 0}, "requested", "w1"})[0].Copy
		b.apply(Event{Kind: EventDisclosed, Time: 10, Set: 3, Owner: "v", Tasks: tasksWithEstimate(1, 5)})
		b.apply(Event{Kind: EventRequested, Time: 10, Set: 3})
		if !on {
			b.decide(10)
			return
		}
		// Set 1 has 90 s left, set 2 40 s: set 1's copy yields.
		ds := b.decide(10, want{DecisionSuspend, TaskRef{1, 0}, "preempted", "w0"}, want{DecisionStart, TaskRef{3, 0}, "requested", "w0"})
		if ds[0].Copy != a {
			t.Fatalf("suspended copy %d, want %d", ds[0].Copy, a)
		}
		// w1 frees first: the suspended copy waits for its own worker.
		b.apply(Event{Kind: EventCopyFinished, Time: 12, Copy: c})
		b.decide(12)
		b.apply(Event{Kind: EventCopyFinished, Time: 15, Copy: ds[1].Copy})
		ds = b.decide(15, want{DecisionResume, TaskRef{1, 0}, "resume", "w0"})
		if ds[0].Copy != a {
			t.Fatalf("resumed copy %d, want %d", ds[0].Copy, a)
		}
	}
	t.Run("on", func(t *testing.T) { t.Parallel(); run(t, true) })
	t.Run("off", func(t *testing.T) { t.Parallel(); run(t, false) })

	t.Run("no preemption for longer work", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone, PreemptRequested: true})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "w"})
		// 6 s left against a new 8 s job: it waits.
		b.apply(Event{Kind: EventDisclosed, Time: 4, Set: 2, Owner: "u", Tasks: tasksWithEstimate(1, 8)})
		b.apply(Event{Kind: EventRequested, Time: 4, Set: 2})
		b.decide(4)
	})
	t.Run("not where the worker cannot suspend", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone, PreemptRequested: true})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 100)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "w"})
		b.apply(Event{Kind: EventDisclosed, Time: 4, Set: 2, Owner: "u", Tasks: tasksWithEstimate(1, 1)})
		b.apply(Event{Kind: EventRequested, Time: 4, Set: 2})
		b.decide(4)
	})
}

// batch-srpt orders whole sets by their total work; batch-srpt-task runs
// the smallest queued task of any set first.
func TestBatchSRPTTask(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pol   Policy
		first TaskRef
	}{{PolicyBatchSRPT, TaskRef{1, 0}}, {PolicyBatchSRPTTask, TaskRef{2, 1}}} {
		t.Run(string(c.pol), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Policy: c.pol, Speculation: SpecNone})
			b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 3}, {Index: 1, EstimateSeconds: 3}}})
			b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "v", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 100}, {Index: 1, EstimateSeconds: 1}}})
			b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
			ds := b.decide(0, want{DecisionStart, c.first, "requested", "w"})
			if c.pol != PolicyBatchSRPTTask {
				return
			}
			// Then 1/0 (3 s), 1/1 (3 s), and 2/0 (100 s) last.
			for i, next := range []TaskRef{{1, 0}, {1, 1}, {2, 0}} {
				b.apply(Event{Kind: EventCopyFinished, Time: float64(i + 1), Copy: ds[0].Copy})
				ds = b.decide(float64(i+1), want{DecisionStart, next, "requested", "w"})
			}
		})
	}
}

// checkSRPT adds to checkInvariants, for preemptive SRPT: after Decide no
// queued requested task at the head of its job's queue could still take
// the slot of a running requested copy with more work left (in a later job,
// or in any job under batch-srpt-task).
func checkSRPT(d *driver, ds []Decision) {
	checkInvariants(d, ds)
	s := d.s
	for _, q := range s.sets {
		if q.rq.len() == 0 || !q.inTree {
			continue
		}
		// The head of each job's queue (the requested queue orders tasks
		// by estimate, unknown first).
		for _, t := range q.rq.items[:1] {
			need, ok := s.tNew(t)
			if !ok {
				continue
			}
			for _, c := range s.copies {
				if !s.victimOK(c) {
					continue
				}
				if rem, ok := s.remaining(c, d.now); ok && c.task.set.inTree && s.beats(q, need, c.task.set, rem) {
					d.t.Fatalf("t=%g: requested task %v (needs %g) queued while copy %d of %v has %g left", d.now, t.ref(), need, c.id, c.task.ref(), rem)
				}
			}
		}
	}
}

func TestPropertyPreemptRequested(t *testing.T) {
	t.Parallel()
	for ci, cfg := range []Config{
		{PreemptRequested: true, Speculation: SpecNone},
		{PreemptRequested: true},
		{PreemptRequested: true, Speculation: SpecBestEffortLATE, Policy: PolicyBatchSRPT},
		{PreemptRequested: true, Speculation: SpecNone, Policy: PolicyBatchSRPTTask},
		{Speculation: SpecBestEffortLATE, Policy: PolicyBatchSRPTTask},
	} {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur := workload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.progress = seed%2 == 0
				d.check = checkInvariants
				if cfg.PreemptRequested && cfg.Speculation == SpecNone {
					d.check = checkSRPT
				}
				playScript(d, script, math.Inf(1))
				d.run(10000)
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.final() {
							t.Fatalf("seed %d: task %v ended in state %s", seed, tk.ref(), toTaskState(tk.state))
						}
					}
				}
				if st := d.s.Stats(); st.RunningCopies != 0 || st.QueuedRequested != 0 || st.BusySlots != 0 || st.SuspendedCopies != 0 {
					t.Fatalf("seed %d: left over %+v", seed, st)
				}
			}
		})
	}
}

// Thousands of requested jobs queued behind busy slots (what a burst of
// clients leaves): one Decide looks for a preemption victim only among the
// jobs that hold slots, not among every later job for every queued one.
// The server runs Decide after every write, so work per Decide that grows
// with the square of the queued jobs slowed every write after a burst.
func TestPreemptRequestedScansHoldersOnly(t *testing.T) {
	t.Parallel()
	const queued = 2000
	b := setup(t, Config{Speculation: SpecNone, PreemptRequested: true})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2, CanSuspend: true})
	// Two big jobs take both slots: many tasks of 10 s each, so they come
	// last in SRPT order, and their running copies have less left than any
	// queued task below needs (no preemption is due).
	for set := SetID(1); set <= 2; set++ {
		b.apply(Event{Kind: EventDisclosed, Set: set, Owner: "u", Tasks: tasksWithEstimate(100, 10)})
		b.apply(Event{Kind: EventRequested, Set: set})
	}
	if ds := b.s.Decide(0); len(ds) != 2 {
		t.Fatalf("first Decide: %+v, want the two big jobs started", ds)
	}
	for set := SetID(3); set < 3+queued; set++ {
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: set, Owner: "u", Tasks: tasksWithEstimate(1, 20)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: set})
	}
	b.s.victimScans = 0
	if ds := b.s.Decide(1); len(ds) != 0 {
		t.Fatalf("Decide with no free slot and no shorter work: %+v, want nothing", ds)
	}
	// Every queued job looks at the two holders, once: not at the ~2,000
	// jobs after it (about 2 million looks).
	if n := b.s.victimScans; n == 0 || n > 2*(queued+2) {
		t.Errorf("one Decide looked at %d jobs for a victim; want at most %d (2 holders per queued job)", n, 2*(queued+2))
	}
}
