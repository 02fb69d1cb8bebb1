// The hopper-decide-1000 experiment: does the server's Hopper default,
// chosen on 200 slots, stay the fastest (or tied) at 1,000 slots?

package sim

import (
	"context"
	"fmt"

	"batchd/sched"
)

// decide1000Configs are the Hopper configurations of the 1,000-slot check,
// as (decideArms index, decideVs index): the server's default first (GRASS
// capped, V = 8·T), then its nearest rivals on 200 slots (GRASS as written
// at V = 8·T without skew, GRASS capped at ⌈2/β·T⌉ with skew) and the
// previous default (GRASS as written, ⌈2/β·T⌉). The per-task estimate,
// cloning and ⌊2/β·T⌋ lost to the default by more than their intervals in
// every cell there and do not run again.
var decide1000Configs = [][2]int{{1, 2}, {0, 2}, {1, 1}, {0, 1}}

// decide1000Skews are the task skews of the check: none and 1%, the
// workloads the default was chosen for (many small tasks, some stragglers).
var decide1000Skews = []float64{0, 0.01}

// hopperDecide1000Exp runs decide1000Configs on the cluster workload's
// 1,000 slots (16 per worker, jobs 1..2,000 tasks) under the node-level
// model at 60% and 80%, with the deciding experiment's shorter window, on
// 10 paired seeds, and reports every configuration against the default.
func hopperDecide1000Exp(ctx context.Context, o Options) ([]Params, func([]Result) Report, error) {
	seeds := 2 * o.seeds()
	base := Defaults(WorkloadCluster)
	base.Warmup, base.Duration, base.Drain = decideWarmup, decideDuration, decideDrain
	utils, skews := decideUtils, decide1000Skews
	if o.Quick {
		seeds, utils, skews = 2, []float64{0.6}, []float64{0.01}
		base.Slots, base.Duration, base.JobSizeMax = 200, 900, 400
	}
	NodeModel.Apply(&base)
	o.Model.Apply(&base)
	base, err := CalibrateWork(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	type key struct{ u, k, c, seed int }
	index := map[key]int{}
	var ps []Params
	for ui, u := range utils {
		for ki, skew := range skews {
			for ci, c := range decide1000Configs {
				a, v := decideArms[c[0]], decideVs[c[1]]
				for seed := range seeds {
					p := base
					p.Utilization, p.Seed, p.TaskSkew = u, int64(seed+1), skew
					p.Sched.Policy, p.Sched.Speculation = sched.PolicySRPTxFCFS, sched.SpecHopperGRASS
					p.Sched.VirtualFactor, p.Sched.VirtualFloor = v.factor, v.floor
					if a.capped {
						p.Sched.LastWaveCopies = grassCopyCap
					}
					index[key{ui, ki, ci, seed}] = len(ps)
					ps = append(ps, p)
				}
			}
		}
	}
	name := func(ci int) string {
		c := decide1000Configs[ci]
		return decideArms[c[0]].name + ", V = " + decideVs[c[1]].name
	}
	analyze := func(rs []Result) Report {
		at := func(ui, ki, ci, seed int) Result { return rs[index[key{ui, ki, ci, seed}]] }
		rep := Report{Title: "The server's Hopper default at 1,000 slots"}
		rep.Setup = fmt.Sprintf("The deciding experiment's question on the cluster workload's full size: %d slots (%d per worker), jobs 1..%d tasks, the node-level straggler model, β = %g, x_m = %gs (a pilot run measured %.1f slot-seconds per task), at %s load, with %s of tasks skewed; the deciding experiment's window (%gs warm-up, %gs measured, drained up to %gs). Hopper (srpt×fcfs + hopper+grass) in %d configurations: the server's default (%s) and its nearest rivals on 200 slots, %s, %s and the previous default %s. The per-task estimate, cloning and ⌊2/β·T⌋ lost to the default by more than their intervals in every cell on 200 slots and do not run again. %d paired seeds (the same arrivals and copy durations for every configuration of a seed); each configuration against the default as 1 − JCT(it)/JCT(default) per seed (positive: faster than the default), then the mean and its 95%% interval over seeds.",
			base.Slots, base.SlotsPerWorker, base.JobSizeMax, base.Beta, base.TaskScale, base.WorkPerTask, pctList(utils), pctList(skews), base.Warmup, base.Duration, base.Drain, len(decide1000Configs), name(0), name(1), name(2), name(3), seeds)
		t := Table{Title: fmt.Sprintf("Every configuration against the server's default at 1,000 slots: reduction in mean JCT (%%, mean ± 95%% CI over %d paired seeds; positive is faster than the default), and the default's mean JCT (s)", seeds),
			Header: []string{"load", "task skew", "default's JCT (s)"}}
		for ci := 1; ci < len(decide1000Configs); ci++ {
			t.Header = append(t.Header, name(ci))
		}
		t.Header = append(t.Header, "jobs unfinished (most of the configurations)")
		fig := Figure{ID: "decide-1000", Kind: FigureBars, Title: "Hopper configurations against the server's default at 1,000 slots (positive: faster than the default)",
			XLabel: "load, task skew", YLabel: "reduction in mean JCT (%)"}
		for ci := 1; ci < len(decide1000Configs); ci++ {
			fig.Series = append(fig.Series, Series{Name: name(ci)})
		}
		for ui, u := range utils {
			for ki, skew := range skews {
				load, sk := pctList([]float64{u}), pctList([]float64{skew})
				fig.Categories = append(fig.Categories, load+", "+sk)
				var jct []float64
				for seed := range seeds {
					jct = append(jct, at(ui, ki, 0, seed).MeanVisibleResponse)
				}
				row := []string{load, sk, fmtCI(Summarize(jct), "")}
				worst := 0.0
				for ci := range decide1000Configs {
					var g, un []float64
					for seed := range seeds {
						r := at(ui, ki, ci, seed)
						g = append(g, 100*(1-r.MeanVisibleResponse/at(ui, ki, 0, seed).MeanVisibleResponse))
						un = append(un, 100*float64(r.Unfinished)/float64(max(r.Requests+r.Unfinished, 1)))
					}
					worst = max(worst, mean(un))
					if ci == 0 {
						continue
					}
					su := Summarize(g)
					se := &fig.Series[ci-1]
					se.X, se.Y = append(se.X, float64(len(se.X))), append(se.Y, su.Mean)
					se.YLo, se.YHi = append(se.YLo, su.Mean-su.HalfWidth), append(se.YHi, su.Mean+su.HalfWidth)
					row = append(row, fmtCI(su, "%"))
					rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide1000-%s-%s-%d", load, sk, ci), Source: "batchd (hopper-decide, 1,000 slots)",
						Metric: fmt.Sprintf("reduction in mean JCT of Hopper, %s vs the server's default (%s), task skew %s, at %s, 1,000 slots", name(ci), name(0), sk, load),
						Paper:  "≤ 0 within the interval (the default is the fastest or tied)", Ours: Summarize(g), Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
				}
				t.Rows = append(t.Rows, append(row, fmt.Sprintf("%.2g%%", worst)))
			}
		}
		rep.Figures = append(rep.Figures, fig)
		rep.Tables = append(rep.Tables, t)
		return rep
	}
	return ps, analyze, nil
}
