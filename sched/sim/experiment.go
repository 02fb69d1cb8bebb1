package sim

import (
	"context"
	"strings"
	"time"

	"batchd/sched"
)

// Options size the experiments.
type Options struct {
	// Seeds is the number of seeds per parameter point (default 5; the
	// Petrou sweep uses SweepSeeds).
	Seeds int
	// SweepSeeds is the number of seeds for each point of the Petrou
	// sweep (default 5); every point and seed has its own random numbers.
	SweepSeeds int
	// SweepStride, when above 1, runs every SweepStride-th point of the
	// Petrou grid only (7 is coprime with the grid's axes, so every value
	// of every parameter still appears).
	SweepStride int
	// Quick shrinks every experiment (a sub-grid, shorter runs) for tests
	// and smoke runs; the numbers are then not comparable to the papers.
	Quick bool
	// Workers is the number of goroutines (default: all cores).
	Workers int
	// Variants forced on every run of the experiment (on top of the
	// configurations it compares): preemptive SRPT in the requested class,
	// tasks per set drawn per set, batch users who may cancel. Preemptive
	// SRPT and per-set sizes are already the defaults of the Petrou and
	// mixed experiments' headline configurations; these force them on the
	// ablation rows too.
	PreemptRequested, SetSizePerSet, BatchCancels bool
	// FairShare turns fair share between users (sched.Config.FairShare)
	// on in every run; FairShareArm adds the Petrou sweep's arm
	// "srpt×fcfs (fair share)" and its comparison with srpt×fcfs.
	FairShare, FairShareArm bool
	// NoPreemptRequested and SetSizePerUser force the alternative readings
	// on every run instead (non-preemptive SRPT over jobs; tasks per set drawn
	// once per user), overriding the above and every configuration's own.
	NoPreemptRequested, SetSizePerUser bool
	// Model, when set, overrides the straggler model and LATE's limits
	// on every multi-task run (the cluster-node experiment starts from
	// NodeModel).
	Model StragglerModel
	// Progress, when set, is told about finished runs.
	Progress func(experiment string, done, total int)
}

func (o Options) seeds() int {
	if o.Seeds < 1 {
		return 5
	}
	return o.Seeds
}

func (o Options) sweepSeeds() int {
	if o.SweepSeeds < 1 {
		return 5
	}
	return o.SweepSeeds
}

// ExperimentNames lists the experiments the report runs, in its order.
// RunExperiment also knows fair-share, stop-rules, hopper-decide-share
// (hopper-decide with the share-capped GRASS arm as well),
// hopper-decide-1000 (the deciding experiment on 1,000 slots) and petrou-2x (the sweep's
// overloaded points with the window doubled), which the report leaves
// out: either of the last two alone would add more CPU time than the
// report's budget has left.
var ExperimentNames = []string{"petrou-sweep", "petrou-fixed", "cluster", "hopper-fig3", "cluster-node", "hopper-decide", "eps-fair", "mixed"}

// RunExperiment runs the named experiment and analyses it.
func RunExperiment(ctx context.Context, name string, o Options) (Report, error) {
	var (
		ps      []Params
		analyze func([]Result) Report
	)
	switch name {
	case "petrou-sweep":
		ps, analyze = petrouSweep(o)
	case "petrou-fixed":
		ps, analyze = petrouFixed(o)
	case "cluster":
		var err error
		if ps, analyze, err = clusterExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "hopper-fig3":
		ps, analyze = hopperFig3(o)
	case "cluster-node":
		var err error
		if ps, analyze, err = clusterNodeExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "hopper-decide":
		var err error
		if ps, analyze, err = hopperDecideExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "hopper-decide-share":
		var err error
		if ps, analyze, err = hopperDecideShareExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "hopper-decide-1000":
		var err error
		if ps, analyze, err = hopperDecide1000Exp(ctx, o); err != nil {
			return Report{}, err
		}
	case "eps-fair":
		var err error
		if ps, analyze, err = epsFairExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "mixed":
		ps, analyze = mixedExp(o)
	case "petrou-2x":
		ps, analyze = petrouOverload(o)
	case "fair-share":
		var err error
		if ps, analyze, err = fairShareExp(ctx, o); err != nil {
			return Report{}, err
		}
	case "stop-rules":
		// Its own small driver, not the closed-loop engine: see stoprule.go.
		start := time.Now()
		rep, err := stopRulesExp(ctx, o)
		rep.WallSeconds = time.Since(start).Seconds()
		return rep, err
	default:
		return Report{}, sched.Errorf(sched.EINVALID, "unknown experiment %q (want one of %s, hopper-decide-share, hopper-decide-1000, petrou-2x, fair-share or stop-rules)", name, strings.Join(ExperimentNames, ", "))
	}
	for i := range ps {
		ps[i].Sched.PreemptRequested = ps[i].Sched.PreemptRequested || o.PreemptRequested
		ps[i].SetSizePerSet = ps[i].SetSizePerSet || o.SetSizePerSet
		ps[i].BatchCancels = ps[i].BatchCancels || o.BatchCancels
		ps[i].Sched.FairShare = ps[i].Sched.FairShare || o.FairShare
		if o.NoPreemptRequested {
			ps[i].Sched.PreemptRequested = false
		}
		if o.SetSizePerUser {
			ps[i].SetSizePerSet = false
		}
		o.Model.Apply(&ps[i])
	}
	var progress func(int, int)
	if o.Progress != nil {
		progress = func(d, t int) { o.Progress(name, d, t) }
	}
	start := time.Now()
	rs, err := RunAll(ctx, ps, o.Workers, progress)
	if err != nil {
		return Report{}, err
	}
	rep := analyze(rs)
	rep.Name = name
	rep.Runs = len(rs)
	for i := range rs {
		rep.Events += rs[i].Events
	}
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

func cfg(p sched.Policy, s sched.Speculation) sched.Config {
	return sched.Config{Policy: p, Speculation: s}
}
