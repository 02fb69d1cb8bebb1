package sim

import (
	"context"
	"reflect"
	"testing"

	"batchd/sched"
)

// Runs that runKey merges have equal results when each runs on its own:
// sizes per set or per user with one task per set, cancelling batch users
// who never change their minds, and cancels under a policy that is not
// batch. RunAll runs each such group once and hands every member its
// result with its own Params.
func TestRunKeyMergesEqualRuns(t *testing.T) {
	t.Parallel()
	base := Defaults(WorkloadPetrou)
	base.Users, base.ServiceMean, base.ThinkMean, base.Duration = 8, 380, 1000, Day
	var pairs [][2]Params
	for _, pol := range []sched.Policy{sched.PolicySRPTxFCFS, sched.PolicyBatchSRPTTask} {
		a := base
		a.Sched = cfg(pol, sched.SpecNone)
		a.SetSizeMax, a.ChangeProbMax = 1, 0.4
		b := a
		b.SetSizePerSet = true
		pairs = append(pairs, [2]Params{a, b})
		a.SetSizeMax, a.ChangeProbMax = 13, 0
		b = a
		b.BatchCancels = true
		pairs = append(pairs, [2]Params{a, b})
	}
	a := base
	a.Sched = cfg(sched.PolicyInteractiveSRPT, sched.SpecNone)
	a.SetSizeMax, a.ChangeProbMax = 13, 0.4
	b := a
	b.BatchCancels = true
	pairs = append(pairs, [2]Params{a, b})
	// Not merged: a batch user with a change probability who may cancel.
	a.Sched = cfg(sched.PolicyBatchSRPTTask, sched.SpecNone)
	b = a
	b.BatchCancels = true
	if runKey(a) == runKey(b) {
		t.Fatal("runKey merges batch users who cancel with those who cannot")
	}
	var ps []Params
	for i, pr := range pairs {
		if runKey(pr[0]) != runKey(pr[1]) {
			t.Fatalf("pair %d: runKey does not merge it", i)
		}
		ra, rb := run(t, pr[0]), run(t, pr[1])
		ra.Params, rb.Params, ra.WallSeconds, rb.WallSeconds = Params{}, Params{}, 0, 0
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("pair %d: the merged runs differ on their own: %+v against %+v", i, pr[0], pr[1])
		}
		ps = append(ps, pr[0], pr[1])
	}
	rs, err := RunAll(context.Background(), ps, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		want := run(t, p)
		if rs[i].Params != p.withDefaults() || rs[i].Events != want.Events || rs[i].MeanVisibleResponse != want.MeanVisibleResponse {
			t.Errorf("run %d: RunAll's result differs from its own run", i)
		}
	}
}
