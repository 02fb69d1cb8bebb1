package sched

import (
	"fmt"
	"strings"
	"testing"
)

func TestStopRuleCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rule StopRule
		res  StopResult
		why  string
	}{
		{"success fires on exit 0", StopRule{OnSuccess: true}, StopResult{ExitCode: 0, Successes: 1}, "exit 0"},
		{"success ignores failure", StopRule{OnSuccess: true}, StopResult{ExitCode: 1}, ""},
		{"success ignores a timeout", StopRule{OnSuccess: true}, StopResult{ExitCode: 0, TimedOut: true}, ""},
		{"exit code listed", StopRule{OnExit: []int32{3, 7}}, StopResult{ExitCode: 7}, "exit 7"},
		{"exit code not listed", StopRule{OnExit: []int32{3, 7}}, StopResult{ExitCode: 4}, ""},
		{"exit 0 listed", StopRule{OnExit: []int32{0}}, StopResult{ExitCode: 0}, "exit 0"},
		{"output matches", StopRule{OnOutput: `found at \d+`}, StopResult{ExitCode: 1, Stdout: []byte("x\nfound at 42\n")}, "output matched"},
		{"output does not match", StopRule{OnOutput: `found at \d+`}, StopResult{Stdout: []byte("nothing")}, ""},
		{"after counts successes", StopRule{After: 3}, StopResult{Successes: 3}, "3 successes"},
		{"after waits", StopRule{After: 3}, StopResult{Successes: 2}, ""},
		{"after ignores a failure", StopRule{After: 1}, StopResult{ExitCode: 2, Successes: 5}, ""},
		{"no rule", StopRule{}, StopResult{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why, fires := c.rule.Check(c.res)
			if why != c.why || fires != (c.why != "") {
				t.Fatalf("Check(%+v) = %q, %v; want %q", c.res, why, fires, c.why)
			}
		})
	}
}

// The scan reads the first StopScanBytes of stdout only.
func TestStopRuleScanIsBounded(t *testing.T) {
	t.Parallel()
	r := StopRule{OnOutput: "needle"}
	out := []byte(strings.Repeat("x", StopScanBytes) + "needle")
	if _, fires := r.Check(StopResult{Stdout: out}); fires {
		t.Fatalf("a match past the first %d bytes fired the rule", StopScanBytes)
	}
	if _, fires := r.Check(StopResult{Stdout: out[len(out)-StopScanBytes:]}); !fires {
		t.Fatalf("a match within the bound did not fire the rule")
	}
}

func TestStopRuleValidate(t *testing.T) {
	t.Parallel()
	for _, r := range []StopRule{
		{OnOutput: "("},
		{OnExit: []int32{256}},
		{OnExit: []int32{-1}},
		{After: -1},
		{OnOutput: strings.Repeat("a", MaxStopPattern+1)},
	} {
		if err := r.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("Validate(%+v) = %v, want %s", r, err, EINVALID)
		}
	}
	if err := (StopRule{OnSuccess: true, OnExit: []int32{0, 255}, OnOutput: "ok$", After: 2}).Validate(); err != nil {
		t.Fatalf("Validate of a good rule: %v", err)
	}
	if _, err := ParseStopOnExit("1,x"); ErrorCode(err) != EINVALID {
		t.Fatalf("ParseStopOnExit(1,x) = %v, want %s", err, EINVALID)
	}
	if got, err := ParseStopOnExit("7, 3,7"); err != nil || fmt.Sprint(got) != "[3 7]" {
		t.Fatalf("ParseStopOnExit = %v, %v; want [3 7]", got, err)
	}
}

// A fired rule cancels every task that still needs a run, requested or
// disclosed, queued, running or suspended; executed and finished tasks
// keep their results.
func TestStopped(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 2, CanSuspend: true})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(6, 10)})
	ds := b.s.Decide(0)
	if len(ds) != 2 {
		t.Fatalf("Decide = %+v, want two starts", ds)
	}
	// Task 0 executes; task 1 still runs; task 2 is requested and queued.
	b.apply(Event{Kind: EventCopyFinished, Time: 1, Copy: ds[0].Copy})
	b.apply(Event{Kind: EventRequested, Time: 1, Set: 1, Indexes: []int32{2}})
	res := b.apply(Event{Kind: EventStopped, Time: 2, Set: 1, Task: TaskRef{Set: 1, Index: 0}})
	if res.Canceled != 5 {
		t.Fatalf("EventStopped canceled %d tasks, want 5", res.Canceled)
	}
	got := b.s.Decide(2)
	if len(got) != 1 || got[0].Kind != DecisionKill || got[0].Copy != ds[1].Copy || got[0].Reason != "stopped" {
		t.Fatalf("Decide after the stop = %+v, want the kill of copy %d (stopped)", got, ds[1].Copy)
	}
	st := b.s.sets[1]
	if st == nil {
		t.Fatalf("the set was forgotten, but task 0 is executed and open")
	}
	if s := st.task(0).state; s != stExecuted {
		t.Fatalf("the triggering task is %s, want executed", toTaskState(s))
	}
	for i := int32(1); i < 6; i++ {
		if s := st.task(i).state; s != stCanceled {
			t.Fatalf("task %d is %s, want canceled", i, toTaskState(s))
		}
	}
	if n := b.s.Stats(); n.QueuedRequested != 0 || n.QueuedDisclosed != 0 {
		t.Fatalf("queues after the stop: %+v", n)
	}
}
