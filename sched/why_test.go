package sched

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// whyConfigs: the strong check (WhyNext means the next Decide starts it)
// holds where nothing but queued work takes a free slot: no speculation,
// no budget.
var whyConfigs = []struct {
	cfg    Config
	strong bool
}{
	{Config{Speculation: SpecNone}, true},
	{Config{Speculation: SpecNone, Policy: PolicyFCFSxFCFS, Preemption: PreemptKill}, true},
	{Config{Speculation: SpecNone, Preemption: PreemptOff}, true},
	{Config{}, false},
	{Config{Speculation: SpecBestEffortLATE}, false},
	{Config{Policy: PolicyInteractiveFCFS}, false},
}

// TestPropertyWhyAgreesWithDecide asks Why about every task without a
// running copy before each Decide of the capped random workloads, and
// checks the answers against what that Decide then does:
//   - a task capped by --max-running does not start;
//   - a disclosed task that waits while no slot is free does not start;
//   - inside one set's queue, tasks start in the order of their positions;
//   - disclosed tasks start in the order of their tasks ahead (FCFS);
//   - where only queued work takes free slots, a task Why calls next
//     starts.
func TestPropertyWhyAgreesWithDecide(t *testing.T) {
	t.Parallel()
	for ci, wc := range whyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, wc.cfg.String()), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 40; seed++ {
				cfg := wc.cfg
				cfg.Seed = seed
				script, dur, caps := cappedWorkload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.progress = seed%2 == 0
				answers := map[TaskRef]WhyAnswer{}
				freeBefore := 0
				d.before = func(d *driver) {
					clear(answers)
					freeBefore = d.s.freeN
					for _, st := range d.s.sets {
						for _, tk := range st.tasks {
							if tk == nil || tk.done() || tk.running() > 0 {
								continue
							}
							a, err := d.s.Why(tk.ref(), d.now)
							if err != nil {
								d.t.Fatalf("Why(%v): %v", tk.ref(), err)
							}
							answers[tk.ref()] = a
						}
					}
				}
				capCheck := checkCaps(caps, false)
				d.check = func(d *driver, ds []Decision) {
					capCheck(d, ds)
					started := map[TaskRef]bool{}
					for _, x := range ds {
						if (x.Kind == DecisionStart && !x.Speculative) || x.Kind == DecisionResume {
							started[x.Task] = true
						}
					}
					for ref, a := range answers {
						switch {
						case started[ref] && a.Reason == WhyCapped:
							d.t.Fatalf("seed %d t=%g: %v started but Why said %s (%+v)", seed, d.now, ref, a.Reason, a)
						case started[ref] && a.Class == "disclosed" && freeBefore == 0 &&
							(a.Reason == WhyNoFreeSlot || a.Reason == WhyDisclosedWaits || a.Reason == WhyWorkerLost):
							d.t.Fatalf("seed %d t=%g: disclosed %v started with no free slot; Why said %s", seed, d.now, ref, a.Reason)
						case !started[ref] && a.Reason == WhyNext && wc.strong:
							d.t.Fatalf("seed %d t=%g: %v did not start; Why said next (%+v)", seed, d.now, ref, a)
						}
						if !started[ref] || !a.Exact {
							continue
						}
						for oref, o := range answers {
							if oref == ref || !o.Exact || started[oref] || o.Class != a.Class || o.Reason == WhySuspended {
								continue
							}
							if d.s.capped(d.s.sets[oref.Set]) {
								continue // its set filled its cap in this Decide
							}
							if oref.Set == ref.Set && o.Position < a.Position {
								d.t.Fatalf("seed %d t=%g: %v (position %d) started before %v (position %d)", seed, d.now, ref, a.Position, oref, o.Position)
							}
							if a.Class == "disclosed" && !d.s.oneQueue && o.TasksAhead < a.TasksAhead {
								d.t.Fatalf("seed %d t=%g: disclosed %v (%d ahead) started before %v (%d ahead)", seed, d.now, ref, a.TasksAhead, oref, o.TasksAhead)
							}
						}
					}
				}
				playScript(d, script, math.Inf(1))
				d.run(10000)
			}
		})
	}
}

// TestWhyExample: one slot, a requested set capped at 1 and a disclosed
// set behind it.
func TestWhyExample(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.dur = func(TaskRef, int, bool) float64 { return 10 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 10), MaxRunning: 1})
	d.apply(Event{Kind: EventRequested, Set: 1})
	d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(3, 10)})
	d.decide() // 1/0 and 2/0 start
	for _, tc := range []struct {
		ref        TaskRef
		reason     WhyReason
		pos, ahead int
	}{
		{TaskRef{1, 0}, WhyRunning, 0, 0},
		{TaskRef{1, 1}, WhyCapped, 0, 0},
		{TaskRef{1, 2}, WhyCapped, 1, 1},
		// Requested work holds one of the two slots; set 1's queued
		// requested tasks are capped and do not count as ahead.
		{TaskRef{2, 1}, WhyDisclosedWaits, 0, 0},
		{TaskRef{2, 2}, WhyDisclosedWaits, 1, 1},
	} {
		a, err := d.s.Why(tc.ref, d.now)
		if err != nil {
			t.Fatal(err)
		}
		if a.Reason != tc.reason || a.Position != tc.pos || a.TasksAhead != tc.ahead {
			t.Errorf("Why(%v) = %s position %d ahead %d; want %s %d %d", tc.ref, a.Reason, a.Position, a.TasksAhead, tc.reason, tc.pos, tc.ahead)
		}
		if tc.reason == WhyDisclosedWaits && !(a.StartInSeconds > 0 && a.FinishInSeconds == a.StartInSeconds+10) {
			t.Errorf("Why(%v): start in %g, finish in %g; want a positive start and a finish 10 s later", tc.ref, a.StartInSeconds, a.FinishInSeconds)
		}
	}
	if _, err := d.s.Why(TaskRef{9, 0}, d.now); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("Why of an unknown set: %v, want ENOTFOUND", err)
	}
}

// TestWhyBoundsAndRunningPastEstimate: for the last of 100,000 requested
// tasks on one slot, the position and the tasks ahead are cut at
// WhyScanLimit and said to be lower bounds, and so is the ETA built on
// them. A running task with an estimate of 20 s and no progress report
// finishes in 20 s less its run time, and once it runs past its estimate
// Why says so and gives no finish estimate (not a guess that keeps
// growing).
func TestWhyBoundsAndRunningPastEstimate(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 1000 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
	const n = 100_000
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(n, 20)})
	d.apply(Event{Kind: EventRequested, Set: 1})
	d.decide()
	a, err := d.s.Why(TaskRef{1, n - 1}, d.now)
	if err != nil {
		t.Fatal(err)
	}
	if a.PositionExact || a.AheadExact || a.Exact || a.Position < WhyScanLimit || !a.StartLowerBound || !a.FinishLowerBound || a.StartInSeconds < 0 {
		t.Errorf("last task: %+v; want position and tasks ahead as lower bounds of at least %d, and a lower-bound ETA", a, WhyScanLimit)
	}
	a, err = d.s.Why(TaskRef{1, 1}, d.now)
	if err != nil || !a.Exact || a.StartLowerBound || a.Position != 0 {
		t.Errorf("second task: %+v, %v; want exact counts and an ETA that is an estimate", a, err)
	}
	for _, c := range []struct {
		at         float64
		finish     float64
		pastEstim  bool
		finishNote string
	}{{5, 15, false, "estimate less"}, {19, 1, false, "estimate less"}, {25, -1, true, "past its estimate of 20s"}, {60, -1, true, "has run 60s"}} {
		d.now = c.at
		a, err := d.s.Why(TaskRef{1, 0}, d.now)
		if err != nil || a.Reason != WhyRunning || a.PastEstimate != c.pastEstim || math.Abs(a.FinishInSeconds-c.finish) > 1e-9 || !strings.Contains(a.Assumptions, c.finishNote) {
			t.Errorf("running task at %gs: %+v, %v; want finish in %g, past estimate %v, %q", c.at, a, err, c.finish, c.pastEstim, c.finishNote)
		}
	}
}
