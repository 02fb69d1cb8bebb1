package sched

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// driver is a small deterministic discrete-event driver for tests: it
// carries out decisions on simulated workers whose copies run for the time
// dur says, reports progress every tick, and checks invariants after every
// Decide.
type driver struct {
	t        testing.TB
	s        *Scheduler
	now      float64
	tick     float64 // Decide (and progress reports) every tick; 0 = only on events
	progress bool    // send progress reports
	// dur is how long copy number n (0 = first) of a task runs.
	dur func(ref TaskRef, n int, spec bool) float64

	live     map[CopyID]*simCopy
	ended    map[CopyID]bool
	slots    map[SlotRef]CopyID
	nCopies  map[TaskRef]int
	finished map[TaskRef]float64 // time the winning copy ended
	owners   map[SetID]string    // each set's owner (the scheduler forgets closed sets)
	log      []Decision
	logTimes []float64
	// check, when set, is called after every Decide with its decisions.
	check func(d *driver, ds []Decision)
	// before, when set, is called before every Decide.
	before func(d *driver)
	// history lists EventDurationObserved for every win, in order: what
	// a store would replay after a restart.
	history []Event
}

type simCopy struct {
	id      CopyID
	ref     TaskRef
	slot    SlotRef
	total   float64 // run time it needs
	done    float64 // run time so far before the current stretch
	started float64 // start of the current stretch
	paused  bool
}

func newDriver(t testing.TB, cfg Config) *driver {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return &driver{t: t, s: s, live: map[CopyID]*simCopy{}, ended: map[CopyID]bool{}, slots: map[SlotRef]CopyID{}, nCopies: map[TaskRef]int{}, finished: map[TaskRef]float64{}}
}

func (d *driver) apply(ev Event) ApplyResult {
	d.t.Helper()
	ev.Time = d.now
	if ev.Kind == EventDisclosed && ev.Owner != "" {
		if d.owners == nil {
			d.owners = map[SetID]string{}
		}
		d.owners[ev.Set] = ev.Owner
	}
	r, err := d.s.Apply(ev)
	if err != nil {
		d.t.Fatalf("Apply(%+v) at %g: %v", ev, d.now, err)
	}
	return r
}

func (d *driver) decide() []Decision {
	d.t.Helper()
	if d.before != nil {
		d.before(d)
	}
	ds := d.s.Decide(d.now)
	for _, x := range ds {
		d.log = append(d.log, x)
		d.logTimes = append(d.logTimes, d.now)
		switch x.Kind {
		case DecisionStart:
			if other, busy := d.slots[x.Slot]; busy {
				d.t.Fatalf("t=%g: start copy %d on slot %v which holds copy %d", d.now, x.Copy, x.Slot, other)
			}
			n := d.nCopies[x.Task]
			d.nCopies[x.Task] = n + 1
			d.live[x.Copy] = &simCopy{id: x.Copy, ref: x.Task, slot: x.Slot, total: d.dur(x.Task, n, x.Speculative), started: d.now}
			d.slots[x.Slot] = x.Copy
		case DecisionKill:
			c := d.live[x.Copy]
			if c == nil {
				if !d.ended[x.Copy] {
					d.t.Fatalf("t=%g: kill of unknown copy %d", d.now, x.Copy)
				}
				continue // it ended in the same instant: drivers race
			}
			if !c.paused {
				delete(d.slots, c.slot)
			}
			delete(d.live, x.Copy)
		case DecisionSuspend:
			c := d.live[x.Copy]
			if c == nil || c.paused {
				d.t.Fatalf("t=%g: suspend of copy %d that is not running", d.now, x.Copy)
			}
			c.done += d.now - c.started
			c.paused = true
			delete(d.slots, c.slot)
		case DecisionResume:
			c := d.live[x.Copy]
			if c == nil || !c.paused {
				d.t.Fatalf("t=%g: resume of copy %d that is not suspended", d.now, x.Copy)
			}
			if c.slot.Worker != x.Slot.Worker {
				d.t.Fatalf("t=%g: copy %d resumed on worker %s, suspended on %s", d.now, x.Copy, x.Slot.Worker, c.slot.Worker)
			}
			if other, busy := d.slots[x.Slot]; busy {
				d.t.Fatalf("t=%g: resume copy %d on slot %v which holds copy %d", d.now, x.Copy, x.Slot, other)
			}
			c.paused = false
			c.started = d.now
			c.slot = x.Slot
			d.slots[x.Slot] = x.Copy
		}
	}
	st := d.s.Stats()
	busy := 0 // a copy of a task that asks for several slots holds them all
	for id := range d.slots {
		busy++
		if c := d.s.copies[d.slots[id]]; c != nil {
			busy += int(c.nextra)
		}
	}
	if st.BusySlots != busy {
		d.t.Fatalf("t=%g: scheduler counts %d busy slots, driver %d", d.now, st.BusySlots, busy)
	}
	if d.check != nil {
		d.check(d, ds)
	}
	return ds
}

// nextEnd is the earliest time a running copy ends.
func (d *driver) nextEnd() (float64, bool) {
	best, ok := math.Inf(1), false
	for _, c := range d.live {
		if c.paused {
			continue
		}
		if e := c.started + c.total - c.done; e < best {
			best, ok = e, true
		}
	}
	return best, ok
}

// step advances to the next copy end or tick (not beyond until), applies
// what happened then, and decides. It reports false when nothing is left to
// happen before until.
func (d *driver) step(until float64) bool {
	d.t.Helper()
	next, ok := d.nextEnd()
	if !ok && d.s.queuedReq == 0 && d.s.queuedDisc == 0 && d.s.suspended == 0 {
		return false // nothing runs or waits: only a new event can change that
	}
	if d.tick > 0 {
		k := math.Floor(d.now/d.tick+1e-9) + 1
		if tk := k * d.tick; tk < next {
			next, ok = tk, true
		}
	}
	if !ok || next > until {
		return false
	}
	d.now = next
	var ending []*simCopy
	for _, c := range d.live {
		if !c.paused && c.started+c.total-c.done <= d.now+1e-9 {
			ending = append(ending, c)
		}
	}
	slices.SortFunc(ending, func(a, b *simCopy) int { return cmpCopyID(a.id, b.id) })
	for _, c := range ending {
		if d.live[c.id] != c {
			continue
		}
		delete(d.live, c.id)
		delete(d.slots, c.slot)
		d.ended[c.id] = true
		var dur float64
		var losers []float64
		if sc := d.s.copies[c.id]; sc != nil {
			dur = sc.runTime(d.now)
			for _, o := range sc.task.copies {
				if o != sc {
					losers = append(losers, o.runTime(d.now))
				}
			}
		}
		if r := d.apply(Event{Kind: EventCopyFinished, Copy: c.id}); r.Won {
			d.history = append(d.history, Event{Kind: EventDurationObserved, Set: c.ref.Set, Owner: d.owners[c.ref.Set], Duration: dur})
			for _, l := range losers {
				d.history = append(d.history, Event{Kind: EventDurationObserved, Set: c.ref.Set, Owner: d.owners[c.ref.Set], Duration: l, Censored: true})
			}
			if _, dup := d.finished[c.ref]; dup {
				d.t.Fatalf("t=%g: task %v won twice", d.now, c.ref)
			}
			d.finished[c.ref] = d.now
		}
	}
	if d.progress {
		ids := make([]CopyID, 0, len(d.live))
		for id := range d.live {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			c := d.live[id]
			run := c.done
			if !c.paused {
				run += d.now - c.started
			}
			d.apply(Event{Kind: EventCopyProgress, Copy: id, Progress: run / c.total})
		}
	}
	d.decide()
	return true
}

func (d *driver) run(until float64) {
	d.t.Helper()
	for d.step(until) {
	}
}

// jobEnd is when the last task of set ended.
func (d *driver) jobEnd(set SetID, n int) float64 {
	end := 0.0
	for i := range n {
		e, ok := d.finished[TaskRef{Set: set, Index: int32(i)}]
		if !ok {
			return math.Inf(1)
		}
		end = max(end, e)
	}
	return end
}

func (d *driver) logString() string {
	s := ""
	for i, x := range d.log {
		s += fmt.Sprintf("t=%g %v\n", d.logTimes[i], x)
	}
	return s
}

func tasksWithEstimate(n int, est float64) []TaskInfo {
	ts := make([]TaskInfo, n)
	for i := range ts {
		ts[i] = TaskInfo{Index: int32(i), EstimateSeconds: est}
	}
	return ts
}
