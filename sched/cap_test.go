package sched

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// cappedWorkload is workload(seed) with a --max-running cap of 1 to 3 on
// about half of the sets.
func cappedWorkload(seed int64) ([]scripted, func(TaskRef, int, bool) float64, map[SetID]int) {
	script, dur := workload(seed)
	r := rand.New(rand.NewSource(seed ^ 0xca9))
	caps := map[SetID]int{}
	for i := range script {
		ev := &script[i].ev
		if ev.Kind == EventDisclosed && r.Intn(2) == 0 {
			ev.MaxRunning = int32(1 + r.Intn(3))
			caps[ev.Set] = int(ev.MaxRunning)
		}
	}
	return script, dur, caps
}

// checkCaps counts, from the driver's own record of what runs where, the
// running copies of each set (speculative ones included) and fails when a
// set has more than its cap. Where nothing holds a free slot back (no
// budget, no detection delay, disclosed work allowed), it also fails when a
// slot is free while a set below its cap has a queued task: capped sets
// must not block the others.
func checkCaps(caps map[SetID]int, workConserving bool) func(d *driver, ds []Decision) {
	return func(d *driver, ds []Decision) {
		checkInvariants(d, ds)
		run, susp := map[SetID]int{}, map[SetID]int{}
		for _, c := range d.live {
			if !c.paused {
				run[c.ref.Set]++
			} else {
				susp[c.ref.Set]++
			}
		}
		for id, st := range d.s.sets {
			if int(st.nsusp) != susp[id] {
				d.t.Fatalf("t=%g: set %d: scheduler counts %d suspended copies, driver %d", d.now, id, st.nsusp, susp[id])
			}
		}
		for id, n := range run {
			if c, ok := caps[id]; ok && n > c {
				d.t.Fatalf("t=%g: set %d runs %d copies, cap %d", d.now, id, n, c)
			}
			if st := d.s.sets[id]; st == nil || int(st.nrun) != n {
				d.t.Fatalf("t=%g: set %d: scheduler counts %d running copies, driver %d", d.now, id, st.nrun, n)
			}
		}
		if !workConserving || d.s.freeN == 0 {
			return
		}
		for id, st := range d.s.sets {
			if d.s.capped(st) {
				continue
			}
			if st.dq.len() > 0 || st.rq.len() > 0 {
				d.t.Fatalf("t=%g: %d free slots while set %d (cap %d, running %d) has %d+%d queued tasks",
					d.now, d.s.freeN, id, st.maxRun, st.nrun, st.rq.len(), st.dq.len())
			}
		}
	}
}

func TestPropertyMaxRunning(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
		t.Run(fmt.Sprintf("%d-%s", ci, cfg.String()), func(t *testing.T) {
			t.Parallel()
			wc := cfg.Speculation != SpecBudgeted && cfg.StragglerAfter == 0 && cfg.Policy != PolicyInteractiveFCFS && cfg.Policy != PolicyInteractiveSRPT
			for seed := int64(1); seed <= 40; seed++ {
				cfg := cfg
				cfg.Seed = seed
				script, dur, caps := cappedWorkload(seed)
				d := newDriver(t, cfg)
				d.dur = dur
				d.tick = 1
				d.progress = seed%2 == 0
				d.check = checkCaps(caps, wc)
				playScript(d, script, math.Inf(1))
				d.run(10000)
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.final() {
							t.Fatalf("seed %d: task %v of a capped workload ended in state %s", seed, tk.ref(), toTaskState(tk.state))
						}
					}
				}
			}
		})
	}
}

// TestMaxRunningExample: two sets on four slots, the first capped at one.
// The cap holds, and the second set takes the three other slots.
func TestMaxRunningExample(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{})
	d.dur = func(TaskRef, int, bool) float64 { return 5 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(4, 5), MaxRunning: 1})
	d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(4, 5)})
	d.apply(Event{Kind: EventRequested, Set: 1})
	ds := d.decide()
	per := map[SetID]int{}
	for _, x := range ds {
		if x.Kind == DecisionStart {
			per[x.Task.Set]++
		}
	}
	if got, want := per, (map[SetID]int{1: 1, 2: 3}); got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("starts per set: got %v, want %v", got, want)
	}
	if lim, run := d.s.MaxRunning(1); lim != 1 || run != 1 {
		t.Fatalf("MaxRunning(1) = %d, %d; want 1, 1", lim, run)
	}
}
