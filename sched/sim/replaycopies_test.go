package sim

import (
	"context"
	"math"
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

// TestReplayOnCopySchedLag: with run times reported, a copy's end carries
// the latency the scheduler has learned by then: none before its first
// sample, the replay's latency after.
func TestReplayOnCopySchedLag(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	tr.ProgressEvery = 0.5
	cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecGRASS}
	var lags []float64
	if _, err := Replay(context.Background(), tr, cfg, ReplayOptions{Seed: 2, Latency: 0.3, ReportRunTime: true, OnCopy: func(c CopyTrace) {
		if c.Won {
			lags = append(lags, c.SchedLag)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if len(lags) < 2 || math.Abs(lags[len(lags)-1]-0.3) > 1e-6 {
		t.Fatalf("the scheduler's latency at the winners' ends: %v, want 0.3 at the last", lags)
	}
}
