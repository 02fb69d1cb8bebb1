package sched

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// scripted is one external event at a time, for the randomized workloads.
type scripted struct {
	at float64
	ev Event
	// loseRandom: instead of ev, lose live copy number pick (mod the
	// number of live copies, in id order).
	loseRandom bool
	pick       int
}

// workload builds a random but seeded scenario: workers, task sets
// disclosed over time, requests, cancels, a worker leaving and coming
// back, and copies lost.
func workload(seed int64) (script []scripted, dur func(TaskRef, int, bool) float64) {
	r := rand.New(rand.NewSource(seed))
	for w := range 3 {
		script = append(script, scripted{at: 0, ev: Event{Kind: EventWorkerUp, Worker: WorkerID(fmt.Sprintf("w%d", w)), Slots: int32(1 + r.Intn(4)), CanSuspend: r.Intn(2) == 0}})
	}
	nsets := 3 + r.Intn(5)
	sizes := map[SetID]int{}
	for i := range nsets {
		id := SetID(i + 1)
		n := 1 + r.Intn(15)
		sizes[id] = n
		ts := make([]TaskInfo, n)
		for k := range ts {
			ts[k] = TaskInfo{Index: int32(k), NoSpeculation: r.Intn(8) == 0}
			if r.Intn(2) == 0 {
				ts[k].EstimateSeconds = float64(1 + r.Intn(6))
			}
		}
		at := math.Round(r.Float64()*40*4) / 4
		script = append(script, scripted{at: at, ev: Event{Kind: EventDisclosed, Set: id, Owner: fmt.Sprintf("u%d", r.Intn(2)), Tasks: ts}})
		// Requests: some single tasks, sometimes all.
		for range r.Intn(4) {
			script = append(script, scripted{at: at + math.Round(r.Float64()*30*4)/4, ev: Event{Kind: EventRequested, Set: id, Indexes: []int32{int32(r.Intn(n))}}})
		}
		if r.Intn(3) == 0 {
			script = append(script, scripted{at: at + math.Round(r.Float64()*30*4)/4, ev: Event{Kind: EventRequested, Set: id}})
		}
		if r.Intn(4) == 0 {
			script = append(script, scripted{at: at + math.Round(r.Float64()*30*4)/4, ev: Event{Kind: EventCanceled, Set: id}})
		}
	}
	down := 10 + math.Round(r.Float64()*30)
	script = append(script, scripted{at: down, ev: Event{Kind: EventWorkerDown, Worker: "w1"}})
	script = append(script, scripted{at: down + 5, ev: Event{Kind: EventWorkerUp, Worker: "w1", Slots: 2, CanSuspend: true}})
	for range 3 {
		script = append(script, scripted{at: math.Round(r.Float64()*60*4) / 4, loseRandom: true, pick: r.Intn(1000)})
	}
	// At the end every set is requested, so every task must finish or be
	// canceled.
	for i := range nsets {
		script = append(script, scripted{at: 80, ev: Event{Kind: EventRequested, Set: SetID(i + 1)}})
	}
	slices.SortStableFunc(script, func(a, b scripted) int {
		if a.at < b.at {
			return -1
		} else if a.at > b.at {
			return 1
		}
		return 0
	})
	durs := map[[3]int]float64{}
	dr := rand.New(rand.NewSource(seed ^ 0x5eed))
	dur = func(ref TaskRef, n int, spec bool) float64 {
		k := [3]int{int(ref.Set), int(ref.Index), n}
		if d, ok := durs[k]; ok {
			return d
		}
		// Pareto(β = 1.5) with scale 1, quantized to quarter units.
		d := math.Ceil(math.Pow(1-dr.Float64(), -1/1.5)*4) / 4
		durs[k] = min(d, 40)
		return durs[k]
	}
	return script, dur
}

// playScript runs script on d; after each external event it decides.
// stopAt < ∞ stops before the first external event at or after it.
func playScript(d *driver, script []scripted, stopAt float64) int {
	for i, sc := range script {
		if sc.at >= stopAt {
			return i
		}
		d.run(sc.at)
		d.now = sc.at
		switch {
		case sc.loseRandom:
			ids := make([]CopyID, 0, len(d.live))
			for id := range d.live {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if len(ids) == 0 {
				continue
			}
			c := d.live[ids[sc.pick%len(ids)]]
			if !c.paused {
				delete(d.slots, c.slot)
			}
			delete(d.live, c.id)
			d.ended[c.id] = true
			d.apply(Event{Kind: EventCopyLost, Copy: c.id})
		case sc.ev.Kind == EventWorkerDown:
			for id, c := range d.live {
				if c.slot.Worker == sc.ev.Worker {
					if !c.paused {
						delete(d.slots, c.slot)
					}
					delete(d.live, id)
					d.ended[id] = true
				}
			}
			d.apply(sc.ev)
		default:
			ev := sc.ev
			if (ev.Kind == EventRequested || ev.Kind == EventCanceled) && d.s.sets[ev.Set] == nil {
				// Every task of the set is final and the scheduler forgot
				// it: the server sends no event then (the store changes
				// nothing).
				continue
			}
			if ev.Kind == EventRequested && ev.Indexes != nil {
				// A single task may have been canceled by then.
				st := d.s.sets[ev.Set]
				if st == nil || st.task(ev.Indexes[0]) == nil || st.task(ev.Indexes[0]).state == stCanceled {
					continue // canceled, or its set is closed and forgotten
				}
			}
			d.apply(ev)
		}
		d.decide()
	}
	return len(script)
}

// checkInvariants verifies the scheduler's bookkeeping and the
// requested-before-disclosed guarantee after a Decide.
func checkInvariants(d *driver, _ []Decision) {
	s := d.s
	free := 0
	holds := map[*liveCopy]int{}
	for _, w := range s.wheap.items {
		free += w.free()
		for slot, c := range w.busy {
			if c != nil {
				holds[c]++
			}
			if c != nil && (c.worker != w || c.state != cRunning || c.worker.busy[c.slot] != c) {
				d.t.Fatalf("t=%g: slot %s/%d holds copy %d that thinks it is on %s/%d", d.now, w.id, slot, c.id, c.worker.id, c.slot)
			}
		}
	}
	for c, n := range holds {
		if n != c.slots() {
			d.t.Fatalf("t=%g: copy %d holds %d slots, thinks %d", d.now, c.id, n, c.slots())
		}
	}
	if free != s.freeN {
		d.t.Fatalf("t=%g: free slots %d, counter %d", d.now, free, s.freeN)
	}
	// Requested tasks of a set at its --max-running cap wait for the set's
	// own copies, not for disclosed work.
	// Nor do tasks that ask for several slots or memory: they never
	// preempt (resource.go).
	queuedReq := 0
	for _, st := range s.sets {
		if !s.capped(st) {
			for _, t := range st.rq.items {
				if t.plain() {
					queuedReq++
				}
			}
		}
	}
	if s.cfg.Preemption != PreemptOff && queuedReq > 0 && len(s.preempt.items) > 0 {
		d.t.Fatalf("t=%g: %d requested tasks wait while disclosed copy %d runs", d.now, queuedReq, s.preempt.items[0].id)
	}
	for _, c := range s.copies {
		if c.task.done() {
			d.t.Fatalf("t=%g: copy %d of task %v that needs no run is live", d.now, c.id, c.task.ref())
		}
		if c.task.noSpec && len(c.task.copies) > 1 {
			d.t.Fatalf("t=%g: task %v has NoSpeculation and %d live copies", d.now, c.task.ref(), len(c.task.copies))
		}
	}
}

var propertyConfigs = []Config{
	{},
	{Policy: PolicyFCFSxFCFS, Preemption: PreemptKill},
	{Speculation: SpecBestEffortLATE, Epsilon: -1},
	{Speculation: SpecBudgeted, Budget: 2},
	{Speculation: SpecNone, Policy: PolicyBatchSRPT},
	{Policy: PolicyInteractiveFCFS, Epsilon: 1},
	{Preemption: PreemptOff, StragglerAfter: 1},
	{Speculation: SpecGRASS},
	{Speculation: SpecGRASS, Grass: GrassRAS, Preemption: PreemptKill},
}

func TestPropertyRandomWorkloads(t *testing.T) {
	t.Parallel()
	for ci, cfg := range propertyConfigs {
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
				playScript(d, script, math.Inf(1))
				d.run(10000)
				// Every task ended: finished (requested at 80) or canceled.
				for _, st := range d.s.sets {
					for _, tk := range st.tasks {
						if tk != nil && !tk.final() {
							t.Fatalf("seed %d: task %v ended in state %s", seed, tk.ref(), toTaskState(tk.state))
						}
					}
				}
				if st := d.s.Stats(); st.RunningCopies != 0 || st.QueuedRequested != 0 || st.BusySlots != 0 {
					t.Fatalf("seed %d: left over %+v", seed, st)
				}
			}
		})
	}
}

// TestDeterministic runs the same events twice and wants the same
// decisions.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 10; seed++ {
		var logs [2]string
		for k := range logs {
			script, dur := workload(seed)
			d := newDriver(t, Config{Seed: seed})
			d.dur = dur
			d.tick = 1
			d.progress = true
			playScript(d, script, math.Inf(1))
			d.run(10000)
			logs[k] = d.logString()
		}
		if logs[0] != logs[1] {
			t.Fatalf("seed %d: two runs of the same events decided differently", seed)
		}
	}
}

// TestRestoreReplays stops a run midway, rebuilds a second scheduler from
// what a store would hold (workers, tasks with their states, live copies),
// and checks that both then decide the same for the same events. β and the
// duration history are not part of the store, so the run uses known
// estimates, the β prior and no speculation, as a restarted server with a
// fresh history would.
func TestRestoreReplays(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 40; seed++ {
		// Odd seeds: no speculation, β prior, no history replayed.
		// Even seeds: the default configuration with progress reports,
		// the history replayed with EventDurationObserved.
		cfg := Config{Speculation: SpecNone, BetaMinSamples: 1 << 30, Seed: seed}
		full := seed%2 == 0
		if full {
			cfg = Config{Seed: seed, BetaMinSamples: 5}
		}
		script, dur := workload(seed)
		for i := range script {
			for k := range script[i].ev.Tasks {
				if script[i].ev.Tasks[k].EstimateSeconds == 0 {
					script[i].ev.Tasks[k].EstimateSeconds = 3
				}
			}
		}
		d := newDriver(t, cfg)
		d.dur = dur
		d.tick = 1
		d.progress = full
		d.check = checkInvariants
		next := playScript(d, script, 30)
		d.run(30)
		d.now = 30

		// Rebuild from the "store".
		cfg2 := cfg
		cfg2.FirstCopyID = d.s.nextCopy
		s2, err := New(cfg2)
		if err != nil {
			t.Fatal(err)
		}
		apply := func(ev Event) {
			t.Helper()
			if _, err := s2.Apply(ev); err != nil {
				t.Fatalf("seed %d: restore %+v: %v", seed, ev, err)
			}
		}
		var wids []WorkerID
		for id := range d.s.workers {
			wids = append(wids, id)
		}
		slices.Sort(wids)
		for _, id := range wids {
			w := d.s.workers[id]
			apply(Event{Kind: EventWorkerUp, Time: 30, Worker: id, Slots: w.slots, CanSuspend: w.canSuspend, BoundUser: w.bound})
		}
		var sids []SetID
		for id := range d.s.sets {
			sids = append(sids, id)
		}
		slices.Sort(sids)
		var attach []Event
		for _, id := range sids {
			st := d.s.sets[id]
			var ts []TaskInfo
			for _, tk := range st.tasks {
				if tk == nil {
					continue
				}
				ts = append(ts, TaskInfo{Index: tk.index, EstimateSeconds: tk.est, NoSpeculation: tk.noSpec, DeadlineSeconds: tk.deadline, State: toTaskState(tk.state), RequestedAt: tk.requestedAt})
				for _, c := range tk.copies {
					// The store knows how long a copy has run: a running
					// copy restarts its clock at its effective start, a
					// suspended one keeps its run time.
					started := c.started - c.runSoFar
					if c.state == cSuspended {
						started = 30 - c.runSoFar
					}
					attach = append(attach, Event{Kind: EventCopyAttached, Time: 30, Copy: c.id, Task: tk.ref(), Slot: SlotRef{Worker: c.worker.id, Slot: c.slot}, Speculative: c.spec, StartedAt: started, Suspended: c.state == cSuspended})
				}
			}
			apply(Event{Kind: EventDisclosed, Time: st.disclosedAt, Set: id, Owner: st.owner, Tasks: ts})
		}
		if full {
			for _, ev := range d.history {
				ev.Time = 30
				apply(ev)
			}
		}
		for _, ev := range attach {
			apply(ev)
			if c := d.s.copies[ev.Copy]; c.progress >= 0 {
				apply(Event{Kind: EventCopyProgress, Time: 30, Copy: ev.Copy, Progress: c.progress})
			}
		}
		a, b := d.s.Stats(), s2.Stats()
		// Speculation counters are not restored; history only when full.
		a.SpeculativeStarted, a.SpeculativeWon = 0, 0
		if !full {
			a.BetaSamples = 0
		}
		if a != b {
			t.Fatalf("seed %d: stats after restore %+v, before %+v", seed, b, a)
		}
		// Both schedulers now see the same future; swap the driver's
		// scheduler for a twin driver sharing the simulated copies.
		d2 := newDriver(t, cfg2)
		d2.s = s2
		d2.dur, d2.tick, d2.now, d2.check, d2.progress = dur, 1, 30, checkInvariants, full
		for id, c := range d.live {
			cc := *c
			d2.live[id] = &cc
		}
		for k, v := range d.slots {
			d2.slots[k] = v
		}
		for k, v := range d.nCopies {
			d2.nCopies[k] = v
		}
		for k, v := range d.ended {
			d2.ended[k] = v
		}
		n1 := len(d.log)
		playScript(d, script[next:], math.Inf(1))
		d.run(10000)
		playScript(d2, script[next:], math.Inf(1))
		d2.run(10000)
		la := fmt.Sprint(d.log[n1:])
		lb := fmt.Sprint(d2.log)
		if la != lb {
			t.Fatalf("seed %d: after restore the decisions differ:\noriginal %s\nrestored %s", seed, la, lb)
		}
	}
}

// FuzzWorkload runs the randomized workload for any seed and configuration
// and checks the same invariants: go test -fuzz FuzzWorkload ./sched/.
func FuzzWorkload(f *testing.F) {
	for i := range propertyConfigs {
		f.Add(int64(i+100), uint8(i), true)
	}
	f.Fuzz(func(t *testing.T, seed int64, ci uint8, progress bool) {
		cfg := propertyConfigs[int(ci)%len(propertyConfigs)]
		cfg.Seed = seed
		script, dur := workload(seed)
		d := newDriver(t, cfg)
		d.dur = dur
		d.tick = 1
		d.progress = progress
		d.check = checkInvariants
		playScript(d, script, math.Inf(1))
		d.run(10000)
		for _, st := range d.s.sets {
			for _, tk := range st.tasks {
				if tk != nil && !tk.final() {
					t.Fatalf("task %v ended in state %s", tk.ref(), toTaskState(tk.state))
				}
			}
		}
	})
}

// TestFloorPathMatchesFull checks that the incremental fairness-floor
// allocation decides exactly as the O(jobs) HopperAllocate path, on the
// random workloads and on bigger ones with many small and large jobs.
func TestFloorPathMatchesFull(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, cfg Config, script []scripted, dur func(TaskRef, int, bool) float64, full bool) (string, int) {
		d := newDriver(t, cfg)
		d.s.fullAlloc = full
		d.dur = dur
		d.tick = 1
		d.progress = true
		d.check = checkInvariants
		playScript(d, script, math.Inf(1))
		d.run(100000)
		return d.logString(), len(d.log)
	}
	for _, eps := range []float64{0.1, -1, 0.5} {
		for seed := int64(1); seed <= 30; seed++ {
			cfg := Config{Epsilon: eps, Seed: seed}
			script, dur := workload(seed)
			a, _ := run(t, cfg, script, dur, false)
			b, _ := run(t, cfg, script, dur, true)
			if a != b {
				t.Fatalf("ε=%g seed %d: floor path and full path decided differently", eps, seed)
			}
			script, dur = bigWorkload(seed)
			a, n := run(t, cfg, script, dur, false)
			b, _ = run(t, cfg, script, dur, true)
			if a != b {
				t.Fatalf("ε=%g seed %d (big): floor path and full path decided differently", eps, seed)
			}
			if n < 100 {
				t.Fatalf("big workload made only %d decisions", n)
			}
		}
	}
}

// bigWorkload: 60 slots, 30 requested sets of 1–40 tasks arriving over
// time, Pareto durations.
func bigWorkload(seed int64) ([]scripted, func(TaskRef, int, bool) float64) {
	r := rand.New(rand.NewSource(seed))
	var script []scripted
	for w := range 6 {
		script = append(script, scripted{at: 0, ev: Event{Kind: EventWorkerUp, Worker: WorkerID(fmt.Sprintf("w%d", w)), Slots: 10, CanSuspend: true}})
	}
	for i := range 30 {
		n := 1 + r.Intn(40)
		if r.Intn(3) == 0 {
			n = 1 + r.Intn(3)
		}
		ts := make([]TaskInfo, n)
		for k := range ts {
			ts[k] = TaskInfo{Index: int32(k), EstimateSeconds: float64(1 + r.Intn(5))}
		}
		at := math.Round(r.Float64() * 30)
		script = append(script, scripted{at: at, ev: Event{Kind: EventDisclosed, Set: SetID(i + 1), Owner: "u", Tasks: ts}})
		script = append(script, scripted{at: at, ev: Event{Kind: EventRequested, Set: SetID(i + 1)}})
	}
	slices.SortStableFunc(script, func(a, b scripted) int {
		if a.at < b.at {
			return -1
		} else if a.at > b.at {
			return 1
		}
		return 0
	})
	dr := rand.New(rand.NewSource(seed ^ 0xb16))
	durs := map[[3]int]float64{}
	return script, func(ref TaskRef, n int, spec bool) float64 {
		k := [3]int{int(ref.Set), int(ref.Index), n}
		if _, ok := durs[k]; !ok {
			durs[k] = min(30, math.Ceil(math.Pow(1-dr.Float64(), -1/1.4)*4)/2)
		}
		return durs[k]
	}
}
