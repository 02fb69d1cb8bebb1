package sched

import (
	"math"
	"testing"
)

// TestLagLearned: a driver that gives copies' run times (the server) has
// its latency learned from the difference to the scheduler's clock, and a
// copy started afterwards counts its run time from its estimated start on
// the worker; a driver that gives none (the simulator) keeps latency 0.
func TestLagLearned(t *testing.T) {
	t.Parallel()
	for _, withDur := range []bool{true, false} {
		s, err := New(Config{Speculation: SpecNone})
		if err != nil {
			t.Fatal(err)
		}
		mustApply := func(ev Event) {
			t.Helper()
			if _, err := s.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		mustApply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		mustApply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 0)})
		mustApply(Event{Kind: EventRequested, Set: 1})
		ds := s.Decide(0)
		if len(ds) != 1 {
			t.Fatalf("decisions %v, want one start", ds)
		}
		ev := Event{Kind: EventCopyFinished, Time: 0.2, Copy: ds[0].Copy}
		if withDur {
			ev.Duration = 0.05
		}
		mustApply(ev)
		want := 0.0
		if withDur {
			want = 0.15
		}
		if got := s.Lag(); math.Abs(got-want) > 1e-9 {
			t.Fatalf("with durations %v: lag %g, want %g", withDur, got, want)
		}
		if got := s.stragglerAfter(); math.Abs(got-want) > 1e-9 {
			t.Fatalf("with durations %v: a copy may be speculated after %g s, want %g (the latency)", withDur, got, want)
		}
		ds = s.Decide(1)
		if len(ds) != 1 {
			t.Fatalf("decisions %v, want one start", ds)
		}
		c := s.copies[ds[0].Copy]
		if got := c.runTime(1.1); math.Abs(got-math.Max(0, 0.1-want)) > 1e-9 {
			t.Fatalf("with durations %v: run time 0.1 s after the start decision %g, want %g", withDur, got, math.Max(0, 0.1-want))
		}
	}
}

// TestPinLag: a pinned estimate holds against the samples that would have
// moved it, and a copy started then counts its run from the pinned one.
func TestPinLag(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Speculation: SpecNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{{Kind: EventWorkerUp, Worker: "w", Slots: 1}, {Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 0)},
		{Kind: EventRequested, Set: 1}} {
		if _, err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	s.PinLag(0.03)
	ds := s.Decide(0)
	if _, err := s.Apply(Event{Kind: EventCopyFinished, Time: 0.5, Copy: ds[0].Copy, Duration: 0.05}); err != nil {
		t.Fatal(err)
	}
	if got := s.Lag(); got != 0.03 {
		t.Fatalf("pinned lag moved to %g by a sample, want 0.03", got)
	}
	ds = s.Decide(1)
	if got := s.copies[ds[0].Copy].runTime(1.1); math.Abs(got-0.07) > 1e-9 {
		t.Fatalf("run time 0.1 s after the start decision %g, want 0.07 (from the pinned latency)", got)
	}
}
