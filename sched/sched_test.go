package sched

import (
	"slices"
	"testing"
)

// bundle is a scheduler under test with helpers that fail the test on
// unexpected errors.
type bundle struct {
	t *testing.T
	s *Scheduler
}

func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &bundle{t: t, s: s}
}

func (b *bundle) apply(ev Event) ApplyResult {
	b.t.Helper()
	r, err := b.s.Apply(ev)
	if err != nil {
		b.t.Fatalf("Apply(%+v): %v", ev, err)
	}
	return r
}

// want checks decisions against expectations (kind, task, reason; worker
// when set).
type want struct {
	kind   DecisionKind
	task   TaskRef
	reason string
	worker WorkerID
}

func (b *bundle) decide(now Time, ws ...want) []Decision {
	b.t.Helper()
	ds := b.s.Decide(now)
	if len(ds) != len(ws) {
		b.t.Fatalf("Decide(%g) = %+v, want %d decisions %+v", now, ds, len(ws), ws)
	}
	for i, w := range ws {
		d := ds[i]
		if d.Kind != w.kind || d.Task != w.task || d.Reason != w.reason || (w.worker != "" && d.Slot.Worker != w.worker) {
			b.t.Fatalf("Decide(%g)[%d] = %+v, want %+v (all: %+v)", now, i, d, w, ds)
		}
	}
	return ds
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 0)})
	b.apply(Event{Kind: EventCanceled, Set: 1, Indexes: []int32{1}})
	for _, tc := range []struct {
		name string
		ev   Event
		code string
	}{
		{"ErrUnknownKind", Event{Kind: 99}, EINVALID},
		{"ErrNaNTime", Event{Kind: EventWorkerUp, Worker: "x", Time: nan()}, EINVALID},
		{"ErrWorkerNoID", Event{Kind: EventWorkerUp, Slots: 1}, EINVALID},
		{"ErrRequestUnknownSet", Event{Kind: EventRequested, Set: 9}, ENOTFOUND},
		{"ErrRequestUnknownTask", Event{Kind: EventRequested, Set: 1, Indexes: []int32{7}}, ENOTFOUND},
		{"ErrRequestCanceled", Event{Kind: EventRequested, Set: 1, Indexes: []int32{1}}, EFAILEDPRECONDITION},
		{"ErrCancelUnknownSet", Event{Kind: EventCanceled, Set: 9}, ENOTFOUND},
		{"ErrDiscloseTwice", Event{Kind: EventDisclosed, Set: 1, Tasks: []TaskInfo{{Index: 0}}}, ECONFLICT},
		{"ErrDiscloseBadIndex", Event{Kind: EventDisclosed, Set: 2, Tasks: []TaskInfo{{Index: -1}}}, EINVALID},
		{"ErrDiscloseBadState", Event{Kind: EventDisclosed, Set: 2, Tasks: []TaskInfo{{Index: 0, State: "weird"}}}, EINVALID},
		{"ErrDiscloseBadEstimate", Event{Kind: EventDisclosed, Set: 2, Tasks: []TaskInfo{{Index: 0, EstimateSeconds: -1}}}, EINVALID},
		{"ErrAttachUnknownWorker", Event{Kind: EventCopyAttached, Copy: 5, Task: TaskRef{1, 0}, Slot: SlotRef{"nobody", 0}}, ENOTFOUND},
		{"ErrAttachUnknownTask", Event{Kind: EventCopyAttached, Copy: 5, Task: TaskRef{1, 9}, Slot: SlotRef{"w", 0}}, ENOTFOUND},
		{"ErrAttachNoSlot", Event{Kind: EventCopyAttached, Copy: 5, Task: TaskRef{1, 0}, Slot: SlotRef{"w", 3}}, EINVALID},
		{"ErrAttachDoneTask", Event{Kind: EventCopyAttached, Copy: 5, Task: TaskRef{1, 1}, Slot: SlotRef{"w", 0}}, EFAILEDPRECONDITION},
	} {
		_, err := b.s.Apply(tc.ev)
		if got := ErrorCode(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.code)
		}
	}
	// A failed event changed nothing: one disclosed task is queued.
	if st := b.s.Stats(); st.QueuedDisclosed != 1 {
		t.Errorf("stats after refused events %+v, want one queued disclosed task", st)
	}
	// Copies the scheduler does not hold are accepted and ignored.
	for _, k := range []EventKind{EventCopyFinished, EventCopyLost, EventCopyProgress} {
		r, err := b.s.Apply(Event{Kind: k, Copy: 12345, Progress: 0.5})
		if err != nil || r.Won {
			t.Errorf("event %d of an unknown copy: %+v, %v; want ignored", k, r, err)
		}
	}
	// Attach conflicts with a copy on the same slot.
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: tasksWithEstimate(2, 0)})
	b.apply(Event{Kind: EventCopyAttached, Copy: 50, Task: TaskRef{3, 0}, Slot: SlotRef{"w", 0}})
	b.apply(Event{Kind: EventCopyAttached, Copy: 50, Task: TaskRef{3, 0}, Slot: SlotRef{"w", 0}}) // same again: fine
	if _, err := b.s.Apply(Event{Kind: EventCopyAttached, Copy: 51, Task: TaskRef{3, 1}, Slot: SlotRef{"w", 0}}); ErrorCode(err) != ECONFLICT {
		t.Errorf("attach on a busy slot: %v, want %s", err, ECONFLICT)
	}
	for _, cfg := range []Config{{Policy: "nope"}, {Speculation: "nope"}, {Preemption: "nope"}, {BetaPrior: 0.5}, {Budget: -1}, {MaxEarlyCopies: -1}} {
		if _, err := New(cfg); ErrorCode(err) != EINVALID {
			t.Errorf("New(%+v): %v, want %s", cfg, err, EINVALID)
		}
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Policy{"": PolicySRPTxFCFS, "srpt-x-fcfs": PolicySRPTxFCFS, "FCFS_x_FCFS": PolicyFCFSxFCFS, "batch-srpt": PolicyBatchSRPT, "interactive_fcfs": PolicyInteractiveFCFS, "srpt×fcfs": PolicySRPTxFCFS} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if sp, n, err := ParseSpeculation("budgeted-3"); err != nil || sp != SpecBudgeted || n != 3 {
		t.Errorf("ParseSpeculation(budgeted-3) = %q, %d, %v", sp, n, err)
	}
	s := setup(t, Config{Speculation: "budgeted-4"}).s
	if c := s.Config(); c.Speculation != SpecBudgeted || c.Budget != 4 || c.String() != "srpt×fcfs / budgeted-4 / suspend" {
		t.Errorf("Config() = %+v (%s)", c, c)
	}
}

func TestFirstCopyID(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{FirstCopyID: 100})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 0)})
	ds := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"}, want{DecisionStart, TaskRef{1, 1}, "disclosed", "w"})
	if ds[0].Copy != 100 || ds[1].Copy != 101 || ds[0].Slot.Slot != 0 || ds[1].Slot.Slot != 1 {
		t.Errorf("starts %+v, want copies 100 and 101 on slots 0 and 1", ds)
	}
}

func TestPreemption(t *testing.T) {
	t.Parallel()
	t.Run("suspend then resume", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 0)})
		ds := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		disc := ds[0].Copy
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(1, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 2})
		ds = b.decide(1, want{DecisionSuspend, TaskRef{1, 0}, "preempted", "w"}, want{DecisionStart, TaskRef{2, 0}, "requested", "w"})
		if ds[0].Copy != disc {
			t.Fatalf("suspended copy %d, want %d", ds[0].Copy, disc)
		}
		if st := b.s.Stats(); st.SuspendedCopies != 1 || st.BusySlots != 1 || st.QueuedDisclosed != 1 {
			t.Fatalf("stats %+v, want one suspended copy, one busy slot, task 1/1 queued", st)
		}
		if r := b.apply(Event{Kind: EventCopyFinished, Time: 3, Copy: ds[1].Copy}); !r.Won {
			t.Fatalf("requested copy's finish did not win")
		}
		// The suspended copy resumes before the queued disclosed task 1/1
		// starts.
		ds = b.decide(3, want{DecisionResume, TaskRef{1, 0}, "resume", "w"})
		if ds[0].Copy != disc {
			t.Fatalf("resumed copy %d, want %d", ds[0].Copy, disc)
		}
	})
	t.Run("kill where the worker cannot suspend", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: false})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 0)})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(1, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 2})
		ds := b.decide(1, want{DecisionKill, TaskRef{1, 0}, "preempted", "w"}, want{DecisionStart, TaskRef{2, 0}, "requested", "w"})
		if st := b.s.Stats(); st.QueuedDisclosed != 1 || st.SuspendedCopies != 0 {
			t.Fatalf("stats %+v, want the killed task queued again", st)
		}
		b.apply(Event{Kind: EventCopyFinished, Time: 2, Copy: ds[1].Copy})
		b.decide(2, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
	})
	t.Run("kill when configured", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone, Preemption: PreemptKill})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 0)})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 1}) // the running task itself: no preemption
		b.decide(1)
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(2, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 2, Indexes: []int32{0}})
		b.decide(1) // only requested copies run: nothing to preempt
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone, Preemption: PreemptOff})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 0)})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(1, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 2})
		b.decide(1)
	})
	t.Run("suspended task requested", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 0)})
		ds := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		disc := ds[0].Copy
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(1, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 2})
		ds = b.decide(1, want{DecisionSuspend, TaskRef{1, 0}, "preempted", "w"}, want{DecisionStart, TaskRef{2, 0}, "requested", "w"})
		// Now the suspended task is requested too: it waits as queued
		// requested work and resumes (no new copy) when its worker frees.
		b.apply(Event{Kind: EventRequested, Time: 2, Set: 1})
		if st := b.s.Stats(); st.QueuedRequested != 1 {
			t.Fatalf("stats %+v, want the suspended requested task queued", st)
		}
		b.decide(2)
		b.apply(Event{Kind: EventCopyFinished, Time: 3, Copy: ds[1].Copy})
		ds = b.decide(3, want{DecisionResume, TaskRef{1, 0}, "resume", "w"})
		if ds[0].Copy != disc {
			t.Fatalf("resumed %d, want %d", ds[0].Copy, disc)
		}
	})
}

func TestSpeculationHygiene(t *testing.T) {
	t.Parallel()
	t.Run("hung single task is speculated on another worker", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 2})
		b.apply(Event{Kind: EventWorkerUp, Worker: "b", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		ds := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"})
		orig := ds[0].Copy
		b.decide(4) // t_rem = 10 − 4 > t_new? no: 6 < 10
		// With β = 1.5 a copy that has run ω without a report needs ω/0.5:
		// at ω = 6 that is 12 > 10.
		ds = b.decide(6, want{DecisionStart, TaskRef{1, 0}, "speculate-gs", "b"})
		if !ds[0].Speculative {
			t.Fatalf("start %+v is not speculative", ds[0])
		}
		spec := ds[0].Copy
		// Both copies hang: in its last wave the job may have more than
		// two copies (GRASS Guideline 2), and with the cluster otherwise
		// idle its Hopper share is every slot (Guideline 3), so the third
		// copy takes the last free slot, on a.
		ds = b.decide(100, want{DecisionStart, TaskRef{1, 0}, "speculate-gs", "a"})
		third := ds[0].Copy
		b.decide(101) // no slot left
		// The speculative copy wins: the other two are killed at once and
		// their slots are free before the driver carries out the kills.
		if r := b.apply(Event{Kind: EventCopyFinished, Time: 101, Copy: spec}); !r.Won {
			t.Fatalf("speculative copy did not win")
		}
		if st := b.s.Stats(); st.BusySlots != 0 || st.SpeculativeWon != 1 || st.SpeculativeStarted != 2 {
			t.Fatalf("stats %+v after the race", st)
		}
		ds = b.decide(101, want{DecisionKill, TaskRef{1, 0}, "lost-race", "a"}, want{DecisionKill, TaskRef{1, 0}, "lost-race", "a"})
		if got := []CopyID{ds[0].Copy, ds[1].Copy}; !slices.Contains(got, orig) || !slices.Contains(got, third) {
			t.Fatalf("killed %v, want the original %d and the third copy %d", got, orig, third)
		}
		// The loser finishing anyway (drivers race) is not the result.
		if r := b.apply(Event{Kind: EventCopyFinished, Time: 101, Copy: orig}); r.Won {
			t.Fatalf("a killed copy won")
		}
	})
	t.Run("reserved slots lent to disclosed work and taken back", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 3, CanSuspend: true})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "v", Tasks: tasksWithEstimate(5, 10)})
		// The requested job's share is ⌈1.5·1⌉ = 2: one slot kept for a
		// copy, lent to disclosed work while nothing requested waits.
		b.decide(0,
			want{DecisionStart, TaskRef{1, 0}, "requested", "a"},
			want{DecisionStart, TaskRef{2, 0}, "disclosed", "a"},
			want{DecisionStart, TaskRef{2, 1}, "disclosed", "a"})
		// At 6 the requested task straggles (t_rem 12 > t_new 10): the
		// most recently started disclosed copy is suspended for its copy.
		b.decide(6,
			want{DecisionSuspend, TaskRef{2, 1}, "preempted", "a"},
			want{DecisionStart, TaskRef{1, 0}, "speculate-gs", "a"})
	})
	t.Run("NoSpeculation", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 4})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 1, NoSpeculation: true}}})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"})
		b.decide(1000)
	})
	t.Run("deadline prunes copies that cannot make it", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 4})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 10, DeadlineSeconds: 30}}})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"})
		b.decide(25) // a copy started at 25 would end at 35, past the deadline
	})
	t.Run("speculation off", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 4})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 1)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"})
		b.decide(1000)
	})
	t.Run("lost copy runs again", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 1})
		b.apply(Event{Kind: EventWorkerUp, Worker: "b", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 1)})
		b.apply(Event{Kind: EventRequested, Set: 1})
		b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"})
		b.apply(Event{Kind: EventWorkerDown, Time: 1, Worker: "a"})
		if st := b.s.Stats(); st.Slots != 1 || st.QueuedRequested != 1 || st.RunningCopies != 0 {
			t.Fatalf("stats %+v after the worker left", st)
		}
		b.decide(1, want{DecisionStart, TaskRef{1, 0}, "requested", "b"})
	})
}

// TestBetaOnline feeds finished copies with Pareto durations and checks
// that β moves from the prior to the fit.
func TestBetaOnline(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{BetaPrior: 3, BetaMinSamples: 50, Speculation: SpecNone})
	n := 402 // the fit is refreshed at 50 samples and every 16 after
	d.dur = func(ref TaskRef, _ int, _ bool) float64 {
		u := (float64(ref.Index) + 0.5) / float64(n)
		return paretoQuantile(u, 1.3)
	}
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 8})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(n, 0)})
	d.apply(Event{Kind: EventRequested, Set: 1})
	if got := d.s.Beta(); got != 3 {
		t.Fatalf("Beta before samples = %g, want the prior 3", got)
	}
	d.decide()
	d.run(1e9)
	st := d.s.Stats()
	if st.BetaSamples != n || st.Beta < 1.1 || st.Beta > 1.6 {
		t.Fatalf("after %d Pareto(1.3) samples: β = %g from %d samples", n, st.Beta, st.BetaSamples)
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	// Set 1: 3 tasks disclosed first; set 2: 1 task disclosed later. One
	// slot. Requests: set 1's task 2 only.
	start := func(t *testing.T, p Policy) *bundle {
		b := setup(t, Config{Policy: p, Speculation: SpecNone})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 5)})
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "v", Tasks: tasksWithEstimate(1, 5)})
		return b
	}
	t.Run("interactive never runs disclosed work", func(t *testing.T) {
		t.Parallel()
		b := start(t, PolicyInteractiveFCFS)
		b.decide(1)
		b.apply(Event{Kind: EventRequested, Time: 2, Set: 1, Indexes: []int32{2}})
		b.decide(2, want{DecisionStart, TaskRef{1, 2}, "requested", "w"})
	})
	t.Run("batch-srpt runs the smaller set first", func(t *testing.T) {
		t.Parallel()
		b := start(t, PolicyBatchSRPT)
		// One queue, SRPT over jobs: set 2 (5 s of work) before set 1 (15 s).
		b.decide(1, want{DecisionStart, TaskRef{2, 0}, "requested", "w"})
	})
	t.Run("batch-fcfs runs the first set first", func(t *testing.T) {
		t.Parallel()
		b := start(t, PolicyBatchFCFS)
		b.decide(1, want{DecisionStart, TaskRef{1, 0}, "requested", "w"})
	})
	t.Run("srpt×fcfs: disclosed FCFS until a request", func(t *testing.T) {
		t.Parallel()
		b := start(t, PolicySRPTxFCFS)
		b.decide(1, want{DecisionStart, TaskRef{1, 0}, "disclosed", "w"})
		// Requesting task 1/2 preempts the disclosed copy (the worker
		// cannot suspend: kill and requeue).
		b.apply(Event{Kind: EventRequested, Time: 2, Set: 1, Indexes: []int32{2}})
		b.decide(2, want{DecisionKill, TaskRef{1, 0}, "preempted", "w"}, want{DecisionStart, TaskRef{1, 2}, "requested", "w"})
	})
}

func TestCancelRequested(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 5)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "w"}, want{DecisionStart, TaskRef{1, 1}, "requested", "w"})
	// Cancel without indexes leaves requested tasks alone.
	b.apply(Event{Kind: EventCanceled, Time: 1, Set: 1})
	b.decide(1)
	// Naming a requested, running task stops it.
	b.apply(Event{Kind: EventCanceled, Time: 1, Set: 1, Indexes: []int32{0}})
	b.decide(1, want{DecisionKill, TaskRef{1, 0}, "canceled", "w"}, want{DecisionStart, TaskRef{1, 2}, "requested", "w"})
	if st := b.s.Stats(); st.QueuedRequested != 0 || st.RunningCopies != 2 || st.RequestedJobs != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A set whose tasks are all final, with no live copy, is forgotten (the
// scheduler holds open work only, as after a restart); executed tasks keep
// their set; a later disclose into a forgotten set makes it anew at the
// indexes given, holding no slots for the indexes before them.
func TestClosedSetsForgotten(t *testing.T) {
	t.Parallel()
	d := newDriver(t, Config{Speculation: SpecNone})
	d.dur = func(TaskRef, int, bool) float64 { return 1 }
	d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(10, 1)})
	d.apply(Event{Kind: EventRequested, Set: 1})
	d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(3, 1)}) // runs, never requested
	d.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: tasksWithEstimate(5, 1)})
	d.apply(Event{Kind: EventCanceled, Set: 3})
	d.decide()
	d.run(1e9)
	if _, ok := d.s.sets[1]; ok {
		t.Error("set 1 (every task finished) is still held")
	}
	if _, ok := d.s.sets[3]; ok {
		t.Error("set 3 (every task canceled) is still held")
	}
	if st := d.s.sets[2]; st == nil || st.open != 3 {
		t.Fatalf("set 2 (3 executed tasks, which a request may still finish) = %+v, want held with 3 open", st)
	}
	if got := len(d.finished); got != 13 {
		t.Fatalf("%d tasks finished or executed, want 13", got)
	}
	// An append far past maxIndexGap into the forgotten set 1.
	far := int32(3 * maxIndexGap)
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: far, EstimateSeconds: 1}, {Index: far + 2, EstimateSeconds: 1}}})
	st := d.s.sets[1]
	if st == nil || st.lo != far || len(st.tasks) != 3 || st.task(far+1) != nil || st.task(far+2) == nil {
		t.Fatalf("after the append: %+v, want tasks %d and %d held in 3 places", st, far, far+2)
	}
	// A lower index moves the held ones up.
	d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: far - 1, EstimateSeconds: 1}}})
	if st.lo != far-1 || st.task(far-1) == nil || st.task(far) == nil || st.task(far+2) == nil || st.task(far+3) != nil {
		t.Fatalf("after a lower index: lo %d, %d held", st.lo, len(st.tasks))
	}
	if _, err := d.s.Apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: far, EstimateSeconds: 1}}}); err == nil {
		t.Error("task disclosed twice accepted")
	}
	d.apply(Event{Kind: EventRequested, Set: 1, Indexes: []int32{far - 1, far, far + 2}})
	d.decide()
	d.run(1e9)
	if _, ok := d.s.sets[1]; ok {
		t.Error("set 1 held after its appended tasks finished")
	}
	if len(d.s.copies) != 0 {
		t.Errorf("%d live copies left", len(d.s.copies))
	}
}

// A lost copy's result that arrives late becomes its task's: the re-run is
// killed, and a task whose re-run has not started yet leaves the queue.
func TestLateResult(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 5)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	ds := b.decide(0, want{DecisionStart, TaskRef{1, 0}, "requested", "a"}, want{DecisionStart, TaskRef{1, 1}, "requested", "a"})
	// Worker a's lease lapses: both copies are lost.
	b.apply(Event{Kind: EventWorkerDown, Time: 5, Worker: "a"})
	b.apply(Event{Kind: EventWorkerUp, Time: 5, Worker: "b", Slots: 1})
	re := b.decide(5, want{DecisionStart, TaskRef{1, 0}, "requested", "b"})
	// The late result of task 0's lost copy kills its re-run.
	if r := b.apply(Event{Kind: EventLateResult, Time: 6, Task: TaskRef{1, 0}}); !r.Won {
		t.Fatalf("late result not won: %+v", r)
	}
	b.decide(6, want{DecisionKill, TaskRef{1, 0}, "late-result", "b"}, want{DecisionStart, TaskRef{1, 1}, "requested", "b"})
	if re[0].Copy == ds[0].Copy {
		t.Fatalf("re-run has the lost copy's id %d", re[0].Copy)
	}
	// Task 1's late result takes its running re-run away too; a second one
	// does not win (the set, every task of it done, is forgotten by then:
	// the store sends no late result for a done task).
	b.apply(Event{Kind: EventLateResult, Time: 7, Task: TaskRef{1, 1}})
	b.decide(7, want{DecisionKill, TaskRef{1, 1}, "late-result", "b"})
	if r, err := b.s.Apply(Event{Kind: EventLateResult, Time: 8, Task: TaskRef{1, 1}}); r.Won || (err != nil && ErrorCode(err) != ENOTFOUND) {
		t.Fatalf("a done task's second late result: %+v, %v", r, err)
	}
	if st := b.s.Stats(); st.QueuedRequested != 0 || st.RunningCopies != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := b.s.Apply(Event{Kind: EventLateResult, Time: 8, Task: TaskRef{9, 0}}); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("unknown task: %v", err)
	}
}
