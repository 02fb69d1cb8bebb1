package sim

import (
	"context"
	"slices"
	"testing"

	"batchd/sched"
)

// The deciding experiment pairs its runs: at a load, skew and seed, every
// arm under SRPT and under Hopper at every V sees the same workload, and
// only the scheduler's configuration differs; its arms set the switches
// they name.
func TestHopperDecidePaired(t *testing.T) {
	t.Parallel()
	t.Run("report", func(t *testing.T) { checkHopperDecidePaired(t, hopperDecideExp, decideArms) })
	t.Run("share", func(t *testing.T) {
		checkHopperDecidePaired(t, hopperDecideShareExp, decideShareArms)
	})
}

// checkHopperDecidePaired checks that exp runs every arm of arms paired
// over seeds, each arm with its own copy bounds.
func checkHopperDecidePaired(t *testing.T, exp func(context.Context, Options) ([]Params, func([]Result) Report, error), arms []decideArm) {
	t.Helper()
	ps, _, err := exp(context.Background(), Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	shares := 0
	for _, p := range ps {
		if p.Sched.LastWaveShare {
			shares++
		}
	}
	if want := slices.ContainsFunc(arms, func(a decideArm) bool { return a.share }); (shares > 0) != want {
		t.Errorf("%d share-capped runs; want some: %v", shares, want)
	}
	per := 0
	for _, a := range arms {
		per++ // SRPT
		for v := range decideVs {
			if a.runsAt(v) {
				per++
			}
		}
	}
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
		if p.Sched.LastWaveShare && (p.Sched.LastWaveCopies != grassCopyCap || p.Sched.GrassPerTask) {
			t.Errorf("share-capped GRASS without the floor, or with per-task estimates: %+v", p.Sched)
		}
		if (p.Sched.LastWaveShare || p.Sched.GrassPerTask || p.Sched.HopperClone) && p.Sched.VirtualFloor {
			t.Errorf("an arm after the first two at V = ⌊2/β·T⌋: %+v", p.Sched)
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

// The 1,000-slot check runs each arm under SRPT and under Hopper at
// V = 8·T, pairs every configuration on the same workload, and has the
// server's default (Hopper, GRASS capped at grassCopyCap) among them.
func TestHopperDecide1000Paired(t *testing.T) {
	t.Parallel()
	ps, _, err := hopperDecide1000Exp(context.Background(), Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	def := false
	for _, p := range ps {
		d := p.Sched
		def = def || d.VirtualFactor == wideVirtual && d.LastWaveCopies == grassCopyCap && !d.LastWaveShare && d.Speculation == sched.SpecHopperGRASS
	}
	if !def {
		t.Error("no run of the server's default")
	}
	configs := pairedCells(t, ps)
	for c, cs := range configs {
		if want := 2 * len(decide1000Arms); len(cs) != want {
			t.Errorf("cell %+v: %d distinct configurations, want %d", c, len(cs), want)
		}
	}
}

// The 2× check pairs each point and seed across the two windows: the runs
// differ only in the measured window, which doubles, and cover only
// points where requested work fills the server.
func TestPetrouOverloadPaired(t *testing.T) {
	t.Parallel()
	ps, analyze := petrouOverload(Options{Quick: true, SweepSeeds: 2})
	half := len(ps) / 2
	if len(ps) == 0 || len(ps)%2 != 0 {
		t.Fatalf("%d runs", len(ps))
	}
	for i := range half {
		a, b := ps[i], ps[half+i]
		if !requestedFills(a) {
			t.Errorf("run %d: requested work does not fill the server", i)
		}
		if b.Duration != 2*a.Duration {
			t.Errorf("run %d: windows %g and %g", i, a.Duration, b.Duration)
		}
		b.Duration = a.Duration
		if a != b {
			t.Errorf("run %d: the 1× and 2× runs differ beyond the window", i)
		}
	}
	rs := make([]Result, len(ps))
	for i := range rs {
		rs[i] = Result{MeanVisibleResponse: 1 + float64(i/half)}
	}
	rep := analyze(rs)
	if got := rep.Tables[1].Rows[0][3]; got != "2.00×" {
		t.Errorf("2× over 1× with every 2× mean double: %q", got)
	}
}
