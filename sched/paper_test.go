package sched

import (
	"math"
	"testing"
)

// TestHopperFigures replays Hopper §3 (Table 1, Figs. 1–2): jobs A and B on
// seven slots, all at time 0, every new copy needing 10, stragglers
// detectable after 2 time units, speculation only when t_rem > t_new.
// Progress reports make the scheduler's t_rem equal t_orig − elapsed, as in
// the paper's footnote 2. The paper's example ignores ε-fairness (§4.3
// comes later), so Epsilon is 1 for it: with the default ε = 0.1 the floor
// ⌊0.9·7/2⌋ = 3 gives B a third slot at time 0, A has no spare slot for
// A4's copy until 10, and the run ends as best effort does (A 20, B 30).
func TestHopperFigures(t *testing.T) {
	t.Parallel()
	orig := map[SetID][]float64{
		1: {10, 10, 10, 30},     // A
		2: {20, 20, 20, 40, 10}, // B
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		wantA  float64
		wantB  float64
		source string
	}{
		{"best-effort", Config{Speculation: SpecBestEffortLATE}, 20, 30, "Fig. 1a"},
		{"budgeted-3", Config{Speculation: SpecBudgeted, Budget: 3}, 12, 32, "Fig. 1b"},
		// 2/β = 1.25: β = 1.6 as the prior, with no samples to move it.
		{"hopper", Config{Speculation: SpecHopperGRASS, BetaPrior: 1.6, BetaMinSamples: 1 << 30, Epsilon: 1}, 12, 22, "Fig. 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.StragglerAfter = 2
			d := newDriver(t, tc.cfg)
			d.tick = 1
			d.progress = true
			d.dur = func(ref TaskRef, n int, spec bool) float64 {
				if n == 0 {
					return orig[ref.Set][ref.Index]
				}
				return 10
			}
			d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 7, CanSuspend: true})
			for _, set := range []SetID{1, 2} {
				d.apply(Event{Kind: EventDisclosed, Set: set, Owner: "u", Tasks: tasksWithEstimate(len(orig[set]), 10)})
				d.apply(Event{Kind: EventRequested, Set: set})
			}
			d.decide()
			d.run(100)
			gotA, gotB := d.jobEnd(1, 4), d.jobEnd(2, 5)
			if gotA != tc.wantA || gotB != tc.wantB {
				t.Errorf("%s: A finished at %g, B at %g; the paper says %g and %g\n%s", tc.source, gotA, gotB, tc.wantA, tc.wantB, d.logString())
			}
		})
	}
}

// TestGRASSIntro is GRASS §1: one free slot, a straggler with 5 time units
// left, a new copy needing 4. GS speculates; RAS does not (1·5 − 2·4 < 0)
// and starts the unscheduled task instead.
func TestGRASSIntro(t *testing.T) {
	t.Parallel()
	// Job: task 0 straggles (progress says 5 left), task 1 finished, task
	// 2 is unscheduled; the job's allocation is 2 slots (one worker, 2
	// slots; ε = 1 and β = 2 make Hopper's V = remaining tasks = 2).
	// GS applies in a job's last two waves, RAS before: the number of
	// queued tasks selects it, so each case sets the queue length.
	type grassCase struct {
		name      string
		queued    int // unscheduled tasks besides the straggler
		wantSpec  bool
		wantState string
		grass     GrassMode
		spec      Speculation
	}
	var cases []grassCase
	// Inside Hopper's share (2 slots) and without Hopper (SpecGRASS: the
	// job's allocation is the 2 slots it can get), the same choices.
	for _, spec := range []Speculation{SpecHopperGRASS, SpecGRASS} {
		cases = append(cases,
			grassCase{"GS", 1, true, "speculate-gs", "", spec},
			grassCase{"RAS", 9, false, "requested", "", spec},
			// Config.Grass fixes one rule whatever the queue (the ablation).
			grassCase{"GS only", 9, true, "speculate-gs", GrassGS, spec},
			grassCase{"RAS only", 1, false, "requested", GrassRAS, spec})
	}
	for _, tc := range cases {
		t.Run(string(tc.spec)+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(Config{Speculation: tc.spec, BetaPrior: 2, BetaMinSamples: 1 << 30, Epsilon: 1, Grass: tc.grass})
			if err != nil {
				t.Fatal(err)
			}
			must := func(ev Event) {
				t.Helper()
				if _, err := s.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			must(Event{Kind: EventWorkerUp, Worker: "a", Slots: 1})
			must(Event{Kind: EventWorkerUp, Worker: "b", Slots: 1})
			must(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 4)})
			must(Event{Kind: EventRequested, Set: 1, Indexes: []int32{0}})
			ds := s.Decide(0)
			if len(ds) != 1 || ds[0].Task.Index != 0 {
				t.Fatalf("first decisions %+v, want task 0 started", ds)
			}
			// Task 0 has run 5 and is half done: t_rem = 5, t_new = 4.
			must(Event{Kind: EventCopyProgress, Time: 5, Copy: ds[0].Copy, Progress: 0.5})
			more := make([]TaskInfo, 0, tc.queued)
			for i := 1; i <= tc.queued; i++ {
				more = append(more, TaskInfo{Index: int32(i), EstimateSeconds: 4})
			}
			must(Event{Kind: EventDisclosed, Time: 5, Set: 1, Tasks: more})
			must(Event{Kind: EventRequested, Time: 5, Set: 1})
			// Hopper's share for this job is 2 slots with 1+queued tasks
			// left when slots are short; RAS needs more than two waves.
			ds = s.Decide(5)
			if len(ds) != 1 {
				t.Fatalf("decisions %+v, want one start", ds)
			}
			if ds[0].Speculative != tc.wantSpec || ds[0].Reason != tc.wantState {
				t.Errorf("decision %+v, want speculative=%v reason %q", ds[0], tc.wantSpec, tc.wantState)
			}
			if tc.wantSpec && ds[0].Slot.Worker == "a" {
				t.Errorf("speculative copy on the straggler's own worker while worker b is free")
			}
		})
	}
}

// TestPetrou checks Petrou §3: with one slot a requested task starts before
// any disclosed one; a disclosed task that executed before its request has
// visible response time 0; cancel removes the set's unrequested tasks from
// every queue and kills their copies.
func TestPetrou(t *testing.T) {
	t.Parallel()
	t.Run("requested first", func(t *testing.T) {
		t.Parallel()
		d := newDriver(t, Config{Speculation: SpecNone})
		d.dur = func(TaskRef, int, bool) float64 { return 3 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(3, 0)})
		d.now = 1
		d.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "v", Tasks: tasksWithEstimate(2, 0)})
		d.apply(Event{Kind: EventRequested, Set: 2, Indexes: []int32{1}})
		ds := d.decide()
		if len(ds) != 1 || ds[0].Task != (TaskRef{2, 1}) || ds[0].Reason != "requested" {
			t.Fatalf("decisions %+v, want requested task 2/1 first", ds)
		}
		d.run(100)
		// Then disclosed work in FCFS order: set 1 (disclosed first) by
		// index, then set 2.
		var order []TaskRef
		for _, x := range d.log {
			if x.Kind == DecisionStart {
				order = append(order, x.Task)
			}
		}
		want := []TaskRef{{2, 1}, {1, 0}, {1, 1}, {1, 2}, {2, 0}}
		if len(order) != len(want) {
			t.Fatalf("start order %v, want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("start order %v, want %v", order, want)
			}
		}
	})
	t.Run("executed then requested", func(t *testing.T) {
		t.Parallel()
		d := newDriver(t, Config{})
		d.dur = func(TaskRef, int, bool) float64 { return 2 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 0)})
		d.decide()
		d.run(10)
		if _, ok := d.finished[TaskRef{1, 0}]; !ok {
			t.Fatalf("disclosed task did not execute on an idle slot")
		}
		d.now = 20
		r := d.apply(Event{Kind: EventRequested, Set: 1})
		if len(r.FinishedAtOnce) != 1 || r.FinishedAtOnce[0] != (TaskRef{1, 0}) {
			t.Fatalf("FinishedAtOnce = %v, want [1/0]: visible response time 0", r.FinishedAtOnce)
		}
		if ds := d.decide(); len(ds) != 0 {
			t.Fatalf("decisions %+v after requesting an executed task, want none", ds)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		d := newDriver(t, Config{Speculation: SpecNone})
		d.dur = func(TaskRef, int, bool) float64 { return 5 }
		d.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
		d.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(6, 0)})
		d.apply(Event{Kind: EventRequested, Set: 1, Indexes: []int32{0}})
		d.decide() // 1/0 requested and 1/1 disclosed run
		d.now = 1
		d.apply(Event{Kind: EventCanceled, Set: 1})
		ds := d.decide()
		if len(ds) != 1 || ds[0].Kind != DecisionKill || ds[0].Task != (TaskRef{1, 1}) || ds[0].Reason != "canceled" {
			t.Fatalf("decisions after cancel %+v, want kill of 1/1", ds)
		}
		st := d.s.Stats()
		if st.QueuedDisclosed != 0 || st.QueuedRequested != 0 || st.RunningCopies != 1 {
			t.Fatalf("stats after cancel %+v: want nothing queued and only the requested copy running", st)
		}
		d.run(100)
		if len(d.finished) != 1 {
			t.Fatalf("finished %v, want only the requested task", d.finished)
		}
	})
}

// TestHopperAllocate checks Pseudocode 1 and ε-fairness on small cases
// computed by hand from the paper's rules.
func TestHopperAllocate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		S    int
		c    float64
		eps  float64
		rem  []int
		want []int
	}{
		{"short: smallest V first", 7, 1.25, 1, []int{4, 5}, []int{5, 2}},
		// S ≥ ΣV = 11.25: every slot in proportion to V (Pseudocode 1
		// line 7), ⌊20·4/9⌋ and ⌊20·5/9⌋.
		{"plenty: proportional to V", 20, 1.25, 1, []int{4, 5}, []int{8, 11}},
		// Just above ΣV = 8.75 (S = 9): ⌊9·3/7⌋ = 3 is below ⌈V⌉ = 4,
		// which a job always gets.
		{"plenty, proportional part below desired", 9, 1.25, 1, []int{3, 4}, []int{4, 5}},
		{"fairness floor", 7, 1.25, 0.1, []int{4, 5}, []int{4, 3}},
		// Unfair: 2, 7, 0; job 2 is raised to the floor 3 (job 0 needs no
		// more than ⌈V⌉ = 2), and job 1 gets what is left.
		{"eps 0 floors the starved job", 9, 2, 0, []int{1, 10, 10}, []int{2, 4, 3}},
		{"one small job may use every slot", 7, 1.25, 0.1, []int{1}, []int{7}},
		{"short: one small job gets its desired allocation", 7, 1.6, 0.1, []int{1, 20}, []int{2, 5}},
	} {
		got := HopperAllocate(tc.S, tc.c, tc.eps, len(tc.rem), func(i int) int { return tc.rem[i] }, nil)
		sum := 0
		for i := range got {
			sum += got[i]
			if got[i] != tc.want[i] {
				t.Errorf("%s: HopperAllocate = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
		if over := sum - tc.S; over > 0 && !(over < len(got) && float64(tc.S) >= tc.c*float64(sumOf(tc.rem))) {
			t.Errorf("%s: allocated %d of %d slots", tc.name, sum, tc.S)
		}
	}
}

func TestHill(t *testing.T) {
	t.Parallel()
	// Exact Pareto quantiles x_i = (1 − u_i)^(−1/β) for a grid of u.
	for _, beta := range []float64{1.2, 1.6, 2.5} {
		xs := make([]float64, 4000)
		for i := range xs {
			u := (float64(i) + 0.5) / float64(len(xs))
			xs[i] = math.Pow(1-u, -1/beta)
		}
		got := Hill(xs, nil)
		if math.Abs(got-beta)/beta > 0.05 {
			t.Errorf("Hill on Pareto(%g) quantiles = %g", beta, got)
		}
	}
}

func paretoQuantile(u, beta float64) float64 { return math.Pow(1-u, -1/beta) }

func sumOf(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
