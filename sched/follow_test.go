package sched

import "testing"

// LiveCopies lists a task's live copies, the one expected to finish first
// first: by remaining time, then the original; a task without a live copy
// has none.
func TestLiveCopies(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Speculation: SpecNone})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(ev Event) {
		t.Helper()
		if _, err := s.Apply(ev); err != nil {
			t.Fatalf("%v: %v", ev.Kind, err)
		}
	}
	ref := TaskRef{Set: 1, Index: 0}
	apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 3})
	apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 100)})
	apply(Event{Kind: EventRequested, Set: 1})
	if got := s.LiveCopies(ref, 0); len(got) != 0 {
		t.Fatalf("before any copy: %v", got)
	}
	apply(Event{Kind: EventCopyAttached, Time: 10, Copy: 7, Task: ref, Slot: SlotRef{Worker: "w", Slot: 0}, StartedAt: 0})
	apply(Event{Kind: EventCopyAttached, Time: 10, Copy: 8, Task: ref, Slot: SlotRef{Worker: "w", Slot: 1}, StartedAt: 0, Speculative: true})
	order := func(now Time) []CopyID {
		var ids []CopyID
		for _, c := range s.LiveCopies(ref, now) {
			if c.Worker != "w" {
				t.Fatalf("copy %d on worker %q, want w", c.Copy, c.Worker)
			}
			ids = append(ids, c.Copy)
		}
		return ids
	}
	if got := order(20); len(got) != 2 || got[0] != 7 || got[1] != 8 {
		t.Fatalf("same start, no progress: %v, want the original first [7 8]", got)
	}
	apply(Event{Kind: EventCopyProgress, Time: 20, Copy: 8, Progress: 0.9})
	if got := order(20); len(got) != 2 || got[0] != 8 {
		t.Fatalf("speculative copy 90%% done: %v, want it first", got)
	}
	if got := s.LiveCopies(TaskRef{Set: 1, Index: 1}, 20); len(got) != 0 {
		t.Fatalf("task without copies: %v", got)
	}
	if got := s.LiveCopies(TaskRef{Set: 9, Index: 0}, 20); got != nil {
		t.Fatalf("unknown set: %v", got)
	}
}
