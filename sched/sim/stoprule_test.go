package sim

import (
	"context"
	"testing"
)

// Without hits nothing stops, and the rule and the poll are the same run;
// with every task a hit, each set stops at its first result, and the rule
// stops it before the poll does.
func TestStopRuleRuns(t *testing.T) {
	t.Parallel()
	p := stopParams{Seed: 1, Slots: 16, SlotsPerWorker: 4, Sets: 20, Tasks: 30, MeanGap: 20, TaskMean: 5, Beta: 2, Requested: true}
	rule, err := runStop(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	p.Poll = 1
	poll, err := runStop(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if rule.Billed != poll.Billed || rule.Free != poll.Free || rule.Events != poll.Events {
		t.Fatalf("without hits the rule's run %+v differs from the poll's %+v", rule, poll)
	}
	p.HitProb, p.Poll = 1, 0
	hit, err := runStop(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if hit.Billed >= rule.Billed/5 {
		t.Fatalf("every task a hit: billed %.1f per set, want far below the %.1f of running every task", hit.Billed, rule.Billed)
	}
	p.Poll = 1
	late, err := runStop(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if late.Decide <= hit.Decide {
		t.Fatalf("the poll decided in %.2f s, the rule in %.2f s", late.Decide, hit.Decide)
	}
}

// Over seeds, the server's rule saves billed work for users who request
// every task and free work for users who disclose (the figures in
// docs/sim.md come from the full run).
func TestStopRulesExperimentSaves(t *testing.T) {
	t.Parallel()
	rep, err := RunExperiment(context.Background(), "stop-rules", Options{Quick: true, Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, c := range rep.Claims {
		got[c.Key] = c.Ours.Mean
	}
	if got["stop-requested-billed-saved"] <= 0 || got["stop-disclosed-free-saved"] <= 0 {
		t.Fatalf("savings %v, want positive billed (requested) and free (disclosed) savings", got)
	}
}
