package sim

import (
	"context"
	"testing"

	"batchd/sched"
)

// TestReplayOnCopy: OnCopy hears of every copy the replay started, each
// once, with its number among its task's copies, for at least every task
// the result counts; every task it heard of has exactly one winner, and
// the speculative copies the scheduler counted are the copies past each
// task's first.
func TestReplayOnCopy(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	tr.ProgressEvery = 0.5
	cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecGRASS}
	type key struct {
		set  sched.SetID
		task int32
	}
	seen := map[key][]CopyTrace{}
	res, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 2, OnCopy: func(c CopyTrace) {
		k := key{c.Set, c.Task}
		seen[k] = append(seen[k], c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var extra int64
	for k, cs := range seen {
		won := 0
		nums := map[int]bool{}
		for _, c := range cs {
			if c.End < c.Start || (c.Won && c.Killed) {
				t.Errorf("task %v: copy %+v", k, c)
			}
			if nums[c.K] {
				t.Errorf("task %v: copy number %d twice", k, c.K)
			}
			nums[c.K] = true
			if c.Won {
				won++
			}
		}
		if won != 1 {
			t.Errorf("task %v: %d winners among %+v", k, won, cs)
		}
		extra += int64(len(cs) - 1)
	}
	if len(seen) < res.Tasks || res.SpeculativeStarted == 0 || extra != res.SpeculativeStarted {
		t.Fatalf("%d tasks heard of (%d finished), %d copies past the first, %d speculative started", len(seen), res.Tasks, extra, res.SpeculativeStarted)
	}
}
