package sched

import "testing"

// TestWaitingSetRunsAfterRelease: a waiting set's tasks are neither
// requested nor disclosed work, even requested while it waits; released,
// they run in the class they were left in.
func TestWaitingSetRunsAfterRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Time: 0, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0}, {Index: 1}}, After: []Dependency{{Set: 9, Index: WholeSet}}})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 1, Indexes: []int32{1}})
	b.apply(Event{Kind: EventDisclosed, Time: 2, Set: 2, Owner: "u", Tasks: []TaskInfo{{Index: 0}}})
	if !b.s.HasDependents(9) || b.s.HasDependents(1) {
		t.Fatal("HasDependents(9), HasDependents(1) are not true, false")
	}
	if !b.s.Waiting(1) || b.s.Waiting(2) {
		t.Fatalf("Waiting(1), Waiting(2) = %v, %v, want true, false", b.s.Waiting(1), b.s.Waiting(2))
	}
	// Only set 2's disclosed task starts, though set 1 holds a requested
	// task and a slot stays free.
	b.decide(3, want{DecisionStart, TaskRef{2, 0}, "disclosed", ""})
	a, err := b.s.Why(TaskRef{1, 1}, 3)
	if err != nil || a.Reason != WhyDependency || a.State != TaskRequested {
		t.Fatalf("Why(1/1) = %+v, %v, want %s, requested", a, err, WhyDependency)
	}
	b.apply(Event{Kind: EventWaitEnded, Time: 4, Set: 1})
	if b.s.Waiting(1) || b.s.HasDependents(9) {
		t.Fatal("set 1 still waits after EventWaitEnded")
	}
	b.decide(5, want{DecisionStart, TaskRef{1, 1}, "requested", ""})
	// A second release of a set that no longer waits changes nothing.
	b.apply(Event{Kind: EventWaitEnded, Time: 6, Set: 1})
	b.decide(7)
}

// TestWaitingSetAppendCancelRestore: tasks appended to a waiting set wait
// with it; canceling every task ends the wait; a restart restores a
// waiting set with its tasks' states.
func TestWaitingSetAppendCancelRestore(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0}}, After: []Dependency{{Set: 9, Index: WholeSet}}})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 1}}}) // appended: waits too
	b.decide(1)
	if _, err := b.s.Apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 1}}}); ErrorCode(err) != ECONFLICT {
		t.Fatalf("disclosing task 1 twice: %v, want %s", err, ECONFLICT)
	}
	b.apply(Event{Kind: EventCanceled, Set: 1})
	if b.s.Waiting(1) {
		t.Fatal("a waiting set whose tasks are all canceled still waits")
	}
	b.decide(2)

	// Restore: set 3 waits with a requested and a canceled task.
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", After: []Dependency{{Set: 9, Index: WholeSet}},
		Tasks: []TaskInfo{{Index: 0, State: TaskRequested, RequestedAt: 1}, {Index: 1, State: TaskCanceled}, {Index: 2}}})
	if _, err := b.s.Apply(Event{Kind: EventRequested, Set: 3, Indexes: []int32{1}}); ErrorCode(err) != EFAILEDPRECONDITION {
		t.Fatalf("requesting a canceled waiting task: %v, want %s", err, EFAILEDPRECONDITION)
	}
	b.decide(3)
	b.apply(Event{Kind: EventWaitEnded, Time: 4, Set: 3})
	b.decide(5, want{DecisionStart, TaskRef{3, 0}, "requested", ""}, want{DecisionStart, TaskRef{3, 2}, "disclosed", ""})
	// A set the scheduler already runs cannot start waiting.
	if _, err := b.s.Apply(Event{Kind: EventDisclosed, Set: 3, Owner: "u", Tasks: []TaskInfo{{Index: 5}}, After: []Dependency{{Set: 9, Index: WholeSet}}}); ErrorCode(err) != EFAILEDPRECONDITION {
		t.Fatalf("waiting after running: %v, want %s", err, EFAILEDPRECONDITION)
	}
}

func TestSetOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		c      TaskCounts
		failed int64
		want   Outcome
	}{
		{"queued", TaskCounts{Requested: 1, Finished: 3, Total: 4}, 0, OutcomePending},
		{"disclosed-never-run", TaskCounts{Disclosed: 1, Finished: 3, Total: 4}, 0, OutcomePending},
		{"ok", TaskCounts{Finished: 3, Total: 3}, 0, OutcomeOK},
		{"executed-unrequested", TaskCounts{Executed: 2, Finished: 1, Total: 3}, 0, OutcomeOK},
		{"rest-canceled", TaskCounts{Finished: 1, Canceled: 999, Total: 1000}, 0, OutcomeOK},
		{"failed", TaskCounts{Finished: 3, Total: 3}, 1, OutcomeFailed},
		{"all-canceled", TaskCounts{Canceled: 3, Total: 3}, 0, OutcomeCanceled},
	} {
		if got := SetOutcome(tc.c, tc.failed); got != tc.want {
			t.Errorf("%s: SetOutcome = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := TaskOutcome(TaskFinished, 0, true); got != OutcomeFailed {
		t.Errorf("timed out: %q, want failed", got)
	}
	if got := TaskOutcome(TaskExecuted, 0, false); got != OutcomeOK {
		t.Errorf("executed: %q, want ok", got)
	}
	if got := TaskOutcome(TaskRequested, 0, false); got != OutcomePending {
		t.Errorf("requested: %q, want pending", got)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	a, anyDep := Dependency{Set: 1, Index: WholeSet}, Dependency{Set: 2, Index: 3, Any: true}
	for _, tc := range []struct {
		name     string
		outcomes []Outcome
		want     Verdict
		reason   string
	}{
		{"both-pending", []Outcome{OutcomePending, OutcomePending}, VerdictWait, ""},
		{"one-left", []Outcome{OutcomeOK, OutcomePending}, VerdictWait, ""},
		{"all-ok", []Outcome{OutcomeOK, OutcomeOK}, VerdictRelease, ""},
		{"any-failed", []Outcome{OutcomeOK, OutcomeFailed}, VerdictRelease, ""},
		{"ok-failed-first", []Outcome{OutcomeFailed, OutcomePending}, VerdictCancel, "dependency set 1 failed"},
		{"ok-canceled", []Outcome{OutcomeCanceled, OutcomeOK}, VerdictCancel, "dependency set 1 was canceled"},
	} {
		v, why := Resolve([]Dependency{a, anyDep}, tc.outcomes)
		if v != tc.want || why != tc.reason {
			t.Errorf("%s: Resolve = %d %q, want %d %q", tc.name, v, why, tc.want, tc.reason)
		}
	}
	if err := CheckDependencies([]Dependency{a, {Set: 1, Index: WholeSet, Any: true}}); ErrorCode(err) != EINVALID {
		t.Errorf("the same set twice: %v, want %s", err, EINVALID)
	}
	if err := CheckDependencies([]Dependency{{Set: 0, Index: WholeSet}}); ErrorCode(err) != EINVALID {
		t.Errorf("set 0: %v, want %s", err, EINVALID)
	}
	if got := anyDep.String(); got != "2/3:any" {
		t.Errorf("String = %q", got)
	}
}

// TestWaitingSetHeld: a hold on a waiting set waits with it: once the
// wait ends the task is held, and starts only when released.
func TestWaitingSetHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecNone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: []TaskInfo{{Index: 0}, {Index: 1}}, After: []Dependency{{Set: 9, Index: WholeSet}}})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 1})
	b.apply(Event{Kind: EventHeld, Time: 2, Set: 1, Indexes: []int32{0}})
	b.apply(Event{Kind: EventWaitEnded, Time: 3, Set: 1})
	b.decide(4, want{DecisionStart, TaskRef{1, 1}, "requested", ""})
	b.apply(Event{Kind: EventReleased, Time: 5, Set: 1, Indexes: []int32{0}})
	b.decide(6, want{DecisionStart, TaskRef{1, 0}, "requested", ""})
}
