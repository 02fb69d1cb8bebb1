package sim

import (
	"context"
	"math"
	"testing"

	"batchd/sched"
)

// TestReplayHearsRequestsWhenTheLiveSchedulerDid: one slot and two jobs of
// one 2 s task. A (set 1) is disclosed and requested at 10 by one call
// heard at 10.25. Heard at its stamp, it starts at once and takes 2 s;
// heard when the live scheduler heard it, it starts then, and its visible
// response, still counted from its stamp, takes the gap too: it is not
// started as disclosed work before it is heard. B (set 3), disclosed at 5,
// ran as disclosed work from 5 to 7: its request at 20, heard at 20.5,
// finds it executed either way.
func TestReplayHearsRequestsWhenTheLiveSchedulerDid(t *testing.T) {
	t.Parallel()
	tr := &sched.Trace{Start: 0, Workers: []sched.TraceWorker{{ID: "w", Slots: 1}}, Sets: []sched.TraceSet{
		{ID: 1, Owner: "u", Tasks: []sched.TraceTask{{DisclosedAt: 10, RequestedAt: 10, HeardAt: 10.25, Copies: []float64{2}}}},
		{ID: 3, Owner: "u", Tasks: []sched.TraceTask{{DisclosedAt: 5, RequestedAt: 20, HeardAt: 20.5, Copies: []float64{2}}}},
	}}
	cfg := sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecNone}
	responses := func(heard bool) map[int32]float64 {
		res, err := Replay(context.Background(), tr, cfg, ReplayOptions{KeepJobs: true, RequestHeard: heard})
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]float64{}
		for _, j := range res.Jobs {
			out[j.Set] = j.Response
		}
		return out
	}
	for _, c := range []struct {
		heard bool
		want  map[int32]float64
	}{
		{false, map[int32]float64{1: 2, 3: 0}},
		{true, map[int32]float64{1: 2.25, 3: 0}},
	} {
		got := responses(c.heard)
		for set, want := range c.want {
			if math.Abs(got[set]-want) > 1e-9 {
				t.Errorf("heard %v: set %d's visible response %.3f s, want %.3f", c.heard, set, got[set], want)
			}
		}
	}
}
