package sim

import (
	"context"
	"slices"
	"testing"
)

// The ε workload is built so that placement cannot move a job: its runs
// differ only in ε and the workers' names, and a run with the workers
// renamed gives every job the same completion time as the run without.
func TestEpsFairPlacementFree(t *testing.T) {
	t.Parallel()
	ps, _, err := epsFairExp(context.Background(), Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var plain, renamed *Params
	for i := range ps {
		p := ps[i]
		if p.TaskSkew != 1 || p.NodeSlowFrac != 0 || p.ProgressNoise != 0 || !p.KeepJobs {
			t.Fatalf("run %d is not the low-noise workload: %+v", i, p)
		}
		if p.Seed == 1 && p.Sched.Epsilon < 0 && p.Sched.VirtualFactor > 0 {
			if p.PlacementSeed == 0 {
				plain = &ps[i]
			} else {
				renamed = &ps[i]
			}
		}
	}
	if plain == nil || renamed == nil {
		t.Fatal("no ε = 0 pair with and without renamed workers")
	}
	q := *renamed
	q.PlacementSeed = 0
	if q != *plain {
		t.Fatalf("the pair differs beyond the workers' names:\n%+v\n%+v", *plain, *renamed)
	}
	a, err := Run(context.Background(), *plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), *renamed)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) < 10 {
		t.Fatalf("%d jobs measured", len(a.Jobs))
	}
	if !slices.Equal(a.Jobs, b.Jobs) {
		t.Errorf("renaming the workers moved jobs: %d jobs", len(a.Jobs))
	}
}
