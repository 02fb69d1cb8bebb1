package sched

import "testing"

// TestDisclosedFairShare: a user who disclosed a mountain of work first
// takes every slot under FCFS (the papers' order, the zero Config), but only
// its share with DisclosedFairShare; a requested task still goes first.
func TestDisclosedFairShare(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, fair bool) map[string]int {
		b := setup(t, Config{Speculation: SpecNone, DisclosedFairShare: fair})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
		b.apply(Event{Kind: EventDisclosed, Time: 0, Set: 1, Owner: "hog", Tasks: tasksWithEstimate(100, 0)})
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "alice", Tasks: tasksWithEstimate(3, 0)})
		b.apply(Event{Kind: EventDisclosed, Time: 2, Set: 3, Owner: "bob", Tasks: tasksWithEstimate(1, 0)})
		owners := map[SetID]string{1: "hog", 2: "alice", 3: "bob"}
		got := map[string]int{}
		for _, d := range b.s.Decide(3) {
			if d.Kind == DecisionStart {
				got[owners[d.Task.Set]]++
			}
		}
		return got
	}
	t.Run("FCFS", func(t *testing.T) {
		t.Parallel()
		if got := run(t, false); got["hog"] != 4 {
			t.Fatalf("starts by owner = %v, want all 4 for hog", got)
		}
	})
	t.Run("FairShare", func(t *testing.T) {
		t.Parallel()
		// Round 1: hog, alice, bob (one each, FCFS among equals); round 2:
		// bob has nothing left, hog and alice hold one each → hog (earlier).
		if got := run(t, true); got["hog"] != 2 || got["alice"] != 1 || got["bob"] != 1 {
			t.Fatalf("starts by owner = %v, want hog 2, alice 1, bob 1", got)
		}
	})
	t.Run("RequestedFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Speculation: SpecNone, DisclosedFairShare: true, Preemption: PreemptOff})
		b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 1})
		b.apply(Event{Kind: EventDisclosed, Time: 0, Set: 1, Owner: "hog", Tasks: tasksWithEstimate(5, 0)})
		b.apply(Event{Kind: EventDisclosed, Time: 1, Set: 2, Owner: "alice", Tasks: tasksWithEstimate(1, 0)})
		b.apply(Event{Kind: EventRequested, Time: 1, Set: 1, Indexes: []int32{3}})
		ds := b.s.Decide(2)
		if len(ds) != 1 || ds[0].Task != (TaskRef{1, 3}) {
			t.Fatalf("Decide = %+v, want the requested task 1/3 alone", ds)
		}
	})
}
