package sched

import "testing"

// QueuedNeeds answers the longest expected run time of a queued task, of
// either class: a task's own estimate, else its set's mean duration; a
// task with neither counts for nothing, and a running one is not queued.
func TestQueuedNeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	if n := b.s.QueuedNeeds(); n.LongestSeconds != 0 {
		t.Fatalf("nothing queued: %+v", n)
	}
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0, EstimateSeconds: 40}, {Index: 1, EstimateSeconds: 700}}})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "v", Tasks: tasksWithEstimate(2, 0)})
	b.apply(Event{Kind: EventRequested, Set: 2})
	if n := b.s.QueuedNeeds(); n.LongestSeconds != 700 {
		t.Fatalf("queued 40 s, 700 s and two unknown: %+v, want 700", n)
	}
	// The 700 s task runs, with set 2's: it is no longer queued.
	b.apply(Event{Kind: EventRequested, Set: 1, Indexes: []int32{1}})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 3})
	if ds := b.s.Decide(0); len(ds) != 3 {
		t.Fatalf("Decide = %+v, want the 3 requested tasks started", ds)
	}
	if n := b.s.QueuedNeeds(); n.LongestSeconds != 40 {
		t.Fatalf("the 700 s task runs: %+v, want 40", n)
	}
	// Set 3's tasks have no estimate; one of its tasks won in 900 s: its
	// queued tasks are expected to take as long.
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "v", Tasks: tasksWithEstimate(2, 0)})
	if n := b.s.QueuedNeeds(); n.LongestSeconds != 40 {
		t.Fatalf("set 3 unknown: %+v, want 40", n)
	}
	b.apply(Event{Kind: EventDurationObserved, Set: 3, Owner: "v", Duration: 900})
	if n := b.s.QueuedNeeds(); n.LongestSeconds != 900 || n.GPUs != 0 {
		t.Fatalf("set 3's mean is 900 s: %+v, want 900 and no GPUs", n)
	}
	b.apply(Event{Kind: EventDisclosed, Set: 4, Owner: "v", Tasks: []TaskInfo{{Index: 0, GPUs: 1}, {Index: 1, GPUs: 3}}})
	if n := b.s.QueuedNeeds(); n.GPUs != 3 {
		t.Fatalf("queued tasks ask for 1 and 3 GPUs: %+v, want 3", n)
	}
}
