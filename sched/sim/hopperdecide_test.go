package sim

import (
	"context"
	"testing"

	"batchd/sched"
)

// The deciding experiment pairs its runs: at a load, skew and seed, every
// arm under SRPT and under Hopper at every V sees the same workload, and
// only the scheduler's configuration differs; its arms set the switches
// they name.
func TestHopperDecidePaired(t *testing.T) {
	t.Parallel()
	ps, _, err := hopperDecideExp(context.Background(), Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	per := len(decideArms) * (1 + len(decideVs))
	if len(ps)%per != 0 {
		t.Fatalf("%d runs, not a multiple of %d configurations", len(ps), per)
	}
	configs := pairedCells(t, ps)
	for _, p := range ps {
		if p.Sched.HopperClone && p.Sched.Speculation != sched.SpecHopperGRASS {
			t.Errorf("cloning inside Hopper's shares without Hopper: %+v", p.Sched)
		}
		if p.Sched.GrassPerTask && p.Sched.LastWaveCopies != grassCopyCap {
			t.Errorf("per-task GRASS without the cap: %+v", p.Sched)
		}
	}
	for c, cs := range configs {
		if len(cs) != per {
			t.Errorf("cell %+v: %d distinct configurations, want %d", c, len(cs), per)
		}
	}
	if len(configs) < 2 {
		t.Errorf("%d cells", len(configs))
	}
}

// decideCell is one load, skew and seed of a paired experiment.
type decideCell struct {
	u, skew float64
	seed    int64
}

// pairedCells checks that the runs of each cell differ only in the
// scheduler's configuration, and returns each cell's configurations.
func pairedCells(t *testing.T, ps []Params) map[decideCell]map[sched.Config]bool {
	t.Helper()
	first := map[decideCell]Params{}
	configs := map[decideCell]map[sched.Config]bool{}
	for _, p := range ps {
		c := decideCell{p.Utilization, p.TaskSkew, p.Seed}
		q := p
		q.Sched = sched.Config{}
		if f, ok := first[c]; !ok {
			first[c], configs[c] = q, map[sched.Config]bool{}
		} else if f != q {
			t.Fatalf("cell %+v: runs differ beyond the scheduler", c)
		}
		configs[c][p.Sched] = true
	}
	return configs
}

// The 1,000-slot check runs the server's default first and pairs every
// configuration on the same workload.
func TestHopperDecide1000Paired(t *testing.T) {
	t.Parallel()
	ps, _, err := hopperDecide1000Exp(context.Background(), Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := ps[0].Sched; d.VirtualFactor != wideVirtual || d.LastWaveCopies != grassCopyCap || d.Speculation != sched.SpecHopperGRASS {
		t.Errorf("first configuration is not the server's default: %+v", d)
	}
	configs := pairedCells(t, ps)
	for c, cs := range configs {
		if len(cs) != len(decide1000Configs) {
			t.Errorf("cell %+v: %d distinct configurations, want %d", c, len(cs), len(decide1000Configs))
		}
	}
}
