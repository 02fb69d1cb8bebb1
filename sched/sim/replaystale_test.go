package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// TestReplayDecidesOnlyWhenALiveServerWould: a killed copy's end never
// happens, so a live server never runs its scheduler then; nor may the
// replay. With the tick out of reach, every start decision of a speculative
// replay comes at a disclosure, a request, a cancel or a copy's real end.
// Before the fix, the replay also decided where each killed copy would have
// ended, and started copies there.
func TestReplayDecidesOnlyWhenALiveServerWould(t *testing.T) {
	t.Parallel()
	tr := testTrace()
	at := map[float64]bool{}
	for _, st := range tr.Sets {
		for _, tk := range st.Tasks {
			at[tk.DisclosedAt], at[tk.RequestedAt], at[tk.CanceledAt] = true, true, true
		}
	}
	for _, spec := range []sched.Speculation{sched.SpecGRASS, sched.SpecBestEffortLATE, sched.SpecHopperGRASS} {
		var starts []float64
		killed := 0
		ends := map[float64]bool{}
		o := ReplayOptions{Seed: 3, Tick: 1e6, OnCopy: func(c CopyTrace) {
			starts = append(starts, c.Start)
			if c.Killed {
				killed++
			} else {
				ends[c.End] = true
			}
		}}
		cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: spec}
		if _, err := Replay(context.Background(), tr, cfg, o); err != nil {
			t.Fatal(err)
		}
		if killed == 0 {
			t.Fatalf("%v: no copy was killed; the test needs some", spec)
		}
		odd := 0
		for _, s := range starts {
			if !at[s] && !ends[s] && !math.IsNaN(s) {
				odd++
			}
		}
		if odd > 0 {
			t.Errorf("%v: %d of %d copies started at no event a live server acts on (%d copies killed)", spec, odd, len(starts), killed)
		}
	}
}
