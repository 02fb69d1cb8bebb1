package sched

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// hillSorted is the textbook Hill estimator by sorting (with censored
// samples as negative values), the reference for Hill's selection.
func hillSorted(xs []float64) float64 {
	a := slices.Clone(xs)
	slices.SortFunc(a, func(x, y float64) int {
		if math.Abs(x) < math.Abs(y) {
			return -1
		} else if math.Abs(x) > math.Abs(y) {
			return 1
		}
		return 0
	})
	n := len(a)
	k := min(max(2, n/4), n-1)
	ref := math.Abs(a[n-k-1])
	sum, ku := 0.0, 0
	for _, x := range a[n-k:] {
		if x > 0 {
			ku++
		}
		sum += math.Log(math.Abs(x) / ref)
	}
	return min(20, max(1.05, float64(ku)/sum))
}

func TestHillSelectMatchesSort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	for trial := range 200 {
		n := 3 + r.Intn(1100)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Pow(1-r.Float64(), -1/1.3)
			if trial%2 == 1 && r.Intn(3) == 0 {
				xs[i] = -xs[i] // censored: distinct magnitudes, no ties
			} else if r.Intn(10) == 0 {
				xs[i] = math.Round(xs[i]) + 1 // ties
			}
		}
		got, want := Hill(xs, nil), hillSorted(xs)
		if math.Abs(got-want) > 1e-9*want {
			t.Fatalf("trial %d (n=%d): Hill = %g, sorted reference %g", trial, n, got, want)
		}
	}
}

// TestHillCensored: speculation kills the long copies; fitting only the
// winners makes the tail look light, the censored estimator does not.
func TestHillCensored(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(3))
	const beta = 1.259
	var winners, all []float64
	for range 20000 {
		d := math.Pow(1-r.Float64(), -1/beta)
		cut := 3 + 10*r.Float64() // a copy raced and won at cut
		if d > cut {
			all = append(all, -cut)
			winners = append(winners, cut*(0.5+r.Float64()))
			continue
		}
		all = append(all, d)
		winners = append(winners, d)
	}
	naive, cens := Hill(winners, nil), Hill(all, nil)
	if math.Abs(cens-beta) > 0.1 {
		t.Errorf("censored Hill = %.3f, want about %.3f", cens, beta)
	}
	if naive < beta+0.3 {
		t.Errorf("winners-only Hill = %.3f: expected it biased well above %.3f", naive, beta)
	}
}

func TestParseGrassMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]GrassMode{"": GrassSwitch, "switch": GrassSwitch, "RAS→GS": GrassSwitch, "gs": GrassGS, " RAS ": GrassRAS} {
		if got, err := ParseGrassMode(in); err != nil || got != want {
			t.Errorf("ParseGrassMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseGrassMode("late"); ErrorCode(err) != EINVALID {
		t.Errorf("ParseGrassMode(late): %v, want EINVALID", err)
	}
	if _, err := New(Config{Grass: "both"}); ErrorCode(err) != EINVALID {
		t.Errorf("New with Grass both: %v, want EINVALID", err)
	}
}

// TestWorkConserving: a job's Hopper share it cannot use goes to queued
// requested tasks of other jobs, except during the detection delay
// (StragglerAfter), when it is held for the job's stragglers (Hopper Fig. 2).
func TestWorkConserving(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		after     float64
		wantStart int
	}{{0, 3}, {5, 2}} {
		s, err := New(Config{BetaPrior: 1.6, BetaMinSamples: 1 << 30, Epsilon: 1, StragglerAfter: tc.after})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range []Event{
			{Kind: EventWorkerUp, Worker: "w", Slots: 3},
			{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)}, // A: V = 1.25
			{Kind: EventRequested, Set: 1},
			{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(5, 10)}, // B: V = 6.25
			{Kind: EventRequested, Set: 2},
		} {
			if _, err := s.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		ds := s.Decide(0)
		if len(ds) != tc.wantStart {
			t.Errorf("StragglerAfter %g: %d starts %+v, want %d", tc.after, len(ds), ds, tc.wantStart)
		}
		if tc.after > 0 {
			// Once the delay is over the held slot goes to B.
			if ds := s.Decide(tc.after); len(ds) != 1 || ds[0].Task.Set != 2 {
				t.Errorf("after the delay: %+v, want one start of B", ds)
			}
		}
	}
}

// TestLastStragglerGetsCopy: a job whose one remaining task straggles has
// V = 2/β ≈ 1.6 and gets a slot for its copy ahead of a larger job's queued
// originals (⌈V⌉, not Pseudocode 1's ⌊V⌋).
func TestLastStragglerGetsCopy(t *testing.T) {
	t.Parallel()
	s, err := New(Config{BetaPrior: 1.25, BetaMinSamples: 1 << 30, Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(ev Event) {
		t.Helper()
		if _, err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	apply(Event{Kind: EventWorkerUp, Worker: "a", Slots: 1})
	apply(Event{Kind: EventWorkerUp, Worker: "b", Slots: 1})
	apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 4)})
	apply(Event{Kind: EventRequested, Set: 1})
	ds := s.Decide(0)
	if len(ds) != 1 {
		t.Fatalf("decisions %+v, want A's task started", ds)
	}
	apply(Event{Kind: EventCopyProgress, Time: 5, Copy: ds[0].Copy, Progress: 0.1}) // t_rem 45 > t_new 4
	apply(Event{Kind: EventDisclosed, Time: 5, Set: 2, Owner: "u", Tasks: tasksWithEstimate(50, 4)})
	apply(Event{Kind: EventRequested, Time: 5, Set: 2})
	ds = s.Decide(5)
	if len(ds) != 1 || ds[0].Task.Set != 1 || !ds[0].Speculative {
		t.Errorf("decisions %+v, want a speculative copy of A's straggler", ds)
	}
}
