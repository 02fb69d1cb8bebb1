package sched

import (
	"fmt"
	"testing"
)

// lateSetup starts a job of n tasks (estimate 10 s) on 2 workers of 10
// slots each and has task i report progress p(i) at t = 5; it returns the
// reasons of the decisions at t = 5.
func lateSetup(t *testing.T, cfg Config, n int, p func(i int) float64) map[string]int {
	t.Helper()
	b := setup(t, cfg)
	b.apply(Event{Kind: EventWorkerUp, Worker: "w0", Slots: 10})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w1", Slots: 10})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(n, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	ds := b.s.Decide(0)
	if len(ds) != n {
		t.Fatalf("Decide(0) = %d decisions, want %d starts", len(ds), n)
	}
	for i, d := range ds {
		b.apply(Event{Kind: EventCopyProgress, Time: 5, Copy: d.Copy, Progress: p(i)})
	}
	got := map[string]int{}
	for _, d := range b.s.Decide(5) {
		got[d.Reason]++
	}
	return got
}

// LATE as deployed: at most SpecCap of the slots run speculative copies,
// and only tasks at or below the SlowTaskQuantile of their job's progress
// rates are speculated. Every task here is a straggler by t_rem > t_new.
func TestLATELimits(t *testing.T) {
	t.Parallel()
	slow := func(i int) float64 { return 0.01 * float64(i+1) } // t_rem 495 s .. 45 s, all > 10 s
	for _, c := range []struct {
		name string
		cfg  Config
		want int
	}{
		{"no limits", Config{Speculation: SpecBestEffortLATE}, 10},
		{"cap 10% of 20 slots", Config{Speculation: SpecBestEffortLATE, SpecCap: 0.1}, 2},
		{"cap 25%: ceil(5)", Config{Speculation: SpecBestEffortLATE, SpecCap: 0.25}, 5},
		{"25th percentile of 10 rates", Config{Speculation: SpecBestEffortLATE, SlowTaskQuantile: 0.25}, 3},
		{"both", Config{Speculation: SpecBestEffortLATE, SpecCap: 0.1, SlowTaskQuantile: 0.25}, 2},
		{"limits are LATE's only", Config{Speculation: SpecGRASS, SpecCap: 0.1, SlowTaskQuantile: 0.25}, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := lateSetup(t, c.cfg, 10, slow)
			n := got["speculate-late"] + got["speculate-gs"] + got["speculate-ras"]
			if n != c.want {
				t.Fatalf("speculative copies = %d (%v), want %d", n, got, c.want)
			}
		})
	}
}

// Cloning starts extra copies of running tasks on free slots without
// waiting for a straggler, fewest copies first.
func TestClone(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Speculation: SpecClone})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 5})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(2, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.decide(0,
		want{DecisionStart, TaskRef{1, 0}, "requested", "w"}, want{DecisionStart, TaskRef{1, 1}, "requested", "w"},
		want{DecisionStart, TaskRef{1, 0}, "clone", "w"}, want{DecisionStart, TaskRef{1, 1}, "clone", "w"},
		want{DecisionStart, TaskRef{1, 0}, "clone", "w"})
}

func TestConfigLimitsValidated(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{SpecCap: -0.1}, {SpecCap: 1.5}, {SlowTaskQuantile: 2}, {VirtualFactor: 0.5}, {VirtualFactor: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	for _, cfg := range []Config{{SpecCap: 0.1, SlowTaskQuantile: 0.25}, {VirtualFactor: 8}} {
		if _, err := New(cfg); err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
	if sp, _, err := ParseSpeculation("clone"); err != nil || sp != SpecClone {
		t.Fatal(fmt.Sprint("ParseSpeculation(clone) = ", sp, err))
	}
}

// A wider virtual size lets the smallest job take more of the slots when
// slots are short (Guideline 2 up to ⌈V⌉).
func TestVirtualFactor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		vf   float64
		want []int
	}{{0, []int{2, 2}}, {3, []int{3, 1}}} {
		b := setup(t, Config{VirtualFactor: c.vf, Epsilon: 1, BetaPrior: 1.25})
		_ = b
		got := HopperAllocate(4, b.s.virtualFactor(), 1, 2, func(int) int { return 1 }, nil)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("VirtualFactor %g: allocation %v, want %v", c.vf, got, c.want)
		}
	}
}

// A job's share that it cannot use goes to the next job in order (Hopper
// §5: a job refuses a slot it cannot use, and the slot goes to the next
// job), for its copies as well as its tasks. Job 1 (one task) gets a share
// of 4 of the 4 slots with V = 4·T and uses one; job 2's straggler then
// takes a slot back from disclosed work for its copy (preempted: killed,
// as this worker cannot suspend). Without the carry
// job 2's share is 0 and its straggler waits for a free slot.
func TestHopperShareCarries(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{VirtualFactor: 4, Epsilon: 1})
	b.apply(Event{Kind: EventWorkerUp, Worker: "w", Slots: 4})
	b.apply(Event{Kind: EventDisclosed, Set: 1, Owner: "u", Tasks: tasksWithEstimate(1, 10)})
	b.apply(Event{Kind: EventRequested, Set: 1})
	b.apply(Event{Kind: EventDisclosed, Set: 2, Owner: "u", Tasks: tasksWithEstimate(2, 10)})
	b.apply(Event{Kind: EventRequested, Set: 2})
	b.apply(Event{Kind: EventDisclosed, Set: 3, Owner: "v", Tasks: tasksWithEstimate(10, 10)})
	ds := b.s.Decide(0)
	copies := map[TaskRef]CopyID{}
	for _, d := range ds {
		if d.Kind != DecisionStart {
			t.Fatalf("Decide(0): %+v, want starts only", d)
		}
		copies[d.Task] = d.Copy
	}
	if len(ds) != 4 || copies[TaskRef{3, 0}] == 0 {
		t.Fatalf("Decide(0) = %+v, want the three requested tasks and one disclosed", ds)
	}
	b.apply(Event{Kind: EventCopyProgress, Time: 5, Copy: copies[TaskRef{1, 0}], Progress: 0.5})
	b.apply(Event{Kind: EventCopyProgress, Time: 5, Copy: copies[TaskRef{2, 0}], Progress: 0.01})
	b.apply(Event{Kind: EventCopyProgress, Time: 5, Copy: copies[TaskRef{2, 1}], Progress: 0.5})
	var suspended, copied bool
	for _, d := range b.s.Decide(5) {
		switch {
		case d.Reason == "preempted" && d.Task == TaskRef{3, 0}:
			suspended = true // killed: the worker cannot suspend
		case d.Kind == DecisionStart && d.Task == TaskRef{2, 0} && d.Speculative:
			copied = true
		}
	}
	if !suspended || !copied {
		t.Fatalf("Decide(5): disclosed copy preempted %v, job 2's straggler copied %v; want both", suspended, copied)
	}
}

// An unused share travels at most carryScan jobs that take none of it;
// a job that takes some resets the count.
func TestPassCarryBounded(t *testing.T) {
	t.Parallel()
	c := shareCarry{n: 5}
	for i := 1; i < carryScan; i++ {
		if c.pass(5); c.n != 5 {
			t.Fatalf("after %d idle jobs the carry is %d, want 5", i, c.n)
		}
	}
	if c.pass(5); c.n != 0 {
		t.Fatalf("after %d idle jobs the carry is %d, want 0", carryScan, c.n)
	}
	c = shareCarry{n: 5, idle: carryScan - 1}
	if c.pass(3); c.n != 3 || c.idle != 0 {
		t.Fatalf("a job that took 2: carry %d, idle %d; want 3, 0", c.n, c.idle)
	}
}
