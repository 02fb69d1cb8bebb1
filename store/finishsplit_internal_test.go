package store

import (
	"context"
	"testing"

	"batchd/sched"
)

// A group commit with a killed copy's end and a speculative copy's end
// after its task's winner: the other ends are written the batched way
// from memory, and the group answers and writes what the one-by-one
// path gives for all of it.
func TestFinishSplitSameAsOneByOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sc := newKnownScene(t)
	var spec FinishKnown
	for _, db := range sc.dbs {
		// Copy 3 (task 2) killed; a speculative copy 100 of task 4, whose
		// first copy (5) wins in the group before it ends.
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 3, Task: sched.TaskRef{Set: sc.set, Index: 2}}}); err != nil {
			t.Fatal(err)
		}
		started, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 100, Task: sched.TaskRef{Set: sc.set, Index: 4},
			Slot: sched.SlotRef{Worker: "w", Slot: 20}, Speculative: true}})
		if err != nil || len(started) != 1 {
			t.Fatalf("start a speculative copy: %v, %d started", err, len(started))
		}
		spec = started[0].Known
	}
	group := func(withKnown bool) []FinishInput {
		ins := sc.ends(withKnown)
		ins[2].Killed, ins[2].ExitCode = true, 137
		last := FinishInput{Worker: "w", Copy: 100, RunSeconds: 0.5, CPUSeconds: 0.25, Stdout: []byte("second\n")}
		if withKnown {
			last.Known = &spec
		}
		return append(ins, last)
	}
	oneByOne, err := sc.dbs[0].FinishCopies(ctx, group(false))
	if err != nil {
		t.Fatal(err)
	}
	split, err := sc.dbs[1].FinishCopies(ctx, group(true))
	if err != nil {
		t.Fatal(err)
	}
	if taken, stale := sc.dbs[1].FinishKnownStats(); taken != 1 || stale != 0 {
		t.Errorf("%d commits from memory, %d stale; want 1, 0 (the ends of the 7 first copies of their tasks)", taken, stale)
	}
	if !split[4].Result.Won || split[8].Result.Won {
		t.Errorf("task 4: copy 5 won %v, copy 100 won %v; want the first to end", split[4].Result.Won, split[8].Result.Won)
	}
	sc.same(t, oneByOne, split)
}

// A copy the server ordered killed after its task was won by another
// copy, which ended by itself before the kill reached it: its end, marked
// in memory (FinishKnown.Killed), goes one by one, and the rest of its
// group is still written from memory instead of failing as stale.
func TestFinishSplitKilledInMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sc := newKnownScene(t)
	for _, db := range sc.dbs {
		ref := sched.TaskRef{Set: sc.set, Index: 4}
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 100, Task: ref,
			Slot: sched.SlotRef{Worker: "w", Slot: 20}, Speculative: true}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FinishCopies(ctx, []FinishInput{{Worker: "w", Copy: 100, RunSeconds: 0.5, Stdout: []byte("first\n")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: 5, Task: ref}}); err != nil {
			t.Fatal(err)
		}
	}
	known := sc.ends(true)
	k := *known[4].Known
	k.Killed = true
	known[4].Known = &k
	oneByOne, err := sc.dbs[0].FinishCopies(ctx, sc.ends(false))
	if err != nil {
		t.Fatal(err)
	}
	split, err := sc.dbs[1].FinishCopies(ctx, known)
	if err != nil {
		t.Fatal(err)
	}
	if taken, stale := sc.dbs[1].FinishKnownStats(); taken != 1 || stale != 0 {
		t.Errorf("%d commits from memory, %d stale; want 1, 0", taken, stale)
	}
	if split[4].Result.Won {
		t.Error("the killed copy's end won its task, which another copy had won")
	}
	sc.same(t, oneByOne, split)
}
