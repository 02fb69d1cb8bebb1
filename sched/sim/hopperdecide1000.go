// The hopper-decide-1000 experiment: does the server's Hopper default,
// chosen on 200 slots, stay the fastest (or tied) at 1,000 slots?

package sim

import (
	"context"
	"fmt"

	"batchd/sched"
)

// decide1000Arms are the decideShareArms indices of the 1,000-slot check:
// GRASS as written, capped at grassCopyCap (the server's default) and
// share-capped, each under SRPT (the baseline) and inside Hopper's shares
// at V = 8·T. The per-task estimate, cloning and the paper's V lost to
// the default by more than their intervals in every cell on 200 slots,
// and the paper's V lost again on 1,000; they do not run here.
var decide1000Arms = []int{0, 1, 4}

// decide1000V is the decideVs index Hopper runs at: 8·T.
const decide1000V = 2

// decide1000Default is the server's default among decide1000Arms.
const decide1000Default = 1

// decide1000Skews are the task skews of the check: the deciding
// experiment's.
var decide1000Skews = decideSkews

// hopperDecide1000Exp runs decide1000Arms under SRPT and Hopper on the cluster workload's
// 1,000 slots (16 per worker, jobs 1..2,000 tasks) under the node-level
// model at 60% and 80%, with the deciding experiment's shorter window, on
// 10 paired seeds, and reports Hopper against SRPT with each arm and every
// configuration against the default.
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
	// v = -1: SRPT with the arm; decide1000V: Hopper.
	type key struct{ u, k, a, v, seed int }
	index := map[key]int{}
	var ps []Params
	for ui, u := range utils {
		for ki, skew := range skews {
			for ai, arm := range decide1000Arms {
				a := decideShareArms[arm]
				for _, v := range []int{-1, decide1000V} {
					for seed := range seeds {
						p := base
						p.Utilization, p.Seed, p.TaskSkew = u, int64(seed+1), skew
						p.Sched.Policy, p.Sched.Speculation = sched.PolicySRPTxFCFS, a.spec
						if v >= 0 {
							p.Sched.Speculation = sched.SpecHopperGRASS
							p.Sched.VirtualFactor, p.Sched.VirtualFloor = decideVs[v].factor, decideVs[v].floor
						}
						a.apply(&p)
						index[key{ui, ki, ai, v, seed}] = len(ps)
						ps = append(ps, p)
					}
				}
			}
		}
	}
	name := func(ai int) string { return decideShareArms[decide1000Arms[ai]].name }
	analyze := func(rs []Result) Report {
		at := func(ui, ki, ai, v, seed int) Result { return rs[index[key{ui, ki, ai, v, seed}]] }
		// gain is 1 − JCT(o)/JCT(b) per seed, in %.
		gain := func(ui, ki, ab, vb, ao, vo int) Summary {
			var g []float64
			for seed := range seeds {
				g = append(g, 100*(1-at(ui, ki, ao, vo, seed).MeanVisibleResponse/at(ui, ki, ab, vb, seed).MeanVisibleResponse))
			}
			return Summarize(g)
		}
		metric := func(ui, ki, ai, v int, f func(Result) float64) Summary {
			var x []float64
			for seed := range seeds {
				x = append(x, f(at(ui, ki, ai, v, seed)))
			}
			return Summarize(x)
		}
		jct := func(r Result) float64 { return r.MeanVisibleResponse }
		unfin := func(r Result) float64 {
			return 100 * float64(r.Unfinished) / float64(max(r.Requests+r.Unfinished, 1))
		}
		V := decideVs[decide1000V].name
		rep := Report{Title: "The deciding Hopper experiment at 1,000 slots"}
		rep.Setup = fmt.Sprintf("The deciding experiment on the cluster workload's full size: %d slots (%d per worker), jobs 1..%d tasks, the node-level straggler model, β = %g, x_m = %gs (a pilot run measured %.1f slot-seconds per task), at %s load, with %s of tasks skewed; the deciding experiment's window (%gs warm-up, %gs measured, drained up to %gs). Three arms, each under SRPT (srpt×fcfs, best effort: the baseline) and inside Hopper's shares (hopper+grass, V = %s): %s; %s, at most %d live copies of a task in its job's last wave (the server's default); %s, at most max(%d, ⌈S/(N·R)⌉), S slots over N jobs in flight, R the job's remaining tasks (Config.LastWaveShare). The per-task estimate, cloning and the paper's V lost to the default by more than their intervals in every cell on 200 slots and do not run here. %d paired seeds (the same arrivals and copy durations for every configuration of a seed); gains are 1 − JCT(it)/JCT(baseline) per seed, then the mean and its 95%% interval over seeds (Student's t).",
			base.Slots, base.SlotsPerWorker, base.JobSizeMax, base.Beta, base.TaskScale, base.WorkPerTask, pctList(utils), pctList(skews), base.Warmup, base.Duration, base.Drain, V, name(0), name(1), grassCopyCap, name(2), grassCopyCap, seeds)
		gt := Table{Title: fmt.Sprintf("1,000 slots: Hopper's gain over SRPT with the same arm (reduction in mean JCT, %%, mean ± 95%% CI over %d paired seeds), and the SRPT baseline's mean JCT (s)", seeds),
			Header: []string{"load", "task skew", "arm", "SRPT's JCT (s)", "SRPT's jobs unfinished", "Hopper, V = " + V, "Hopper's jobs unfinished"}}
		dt := Table{Title: fmt.Sprintf("1,000 slots: every configuration against the server's default (hopper+grass, %s, V = %s): reduction in mean JCT (%%, mean ± 95%% CI over %d paired seeds; positive is faster than the default)", name(decide1000Default), V, seeds),
			Header: []string{"load", "task skew", "default's JCT (s)"}}
		for ai := range decide1000Arms {
			dt.Header = append(dt.Header, "SRPT, "+name(ai))
		}
		for ai := range decide1000Arms {
			if ai != decide1000Default {
				dt.Header = append(dt.Header, "Hopper, "+name(ai))
			}
		}
		fig := Figure{ID: "decide-1000", Kind: FigureBars, Title: "Hopper configurations against the server's default at 1,000 slots (positive: faster than the default)",
			XLabel: "load, task skew", YLabel: "reduction in mean JCT (%)"}
		for ai := range decide1000Arms {
			if ai != decide1000Default {
				fig.Series = append(fig.Series, Series{Name: "Hopper, " + name(ai)})
			}
		}
		for ui, u := range utils {
			for ki, skew := range skews {
				load, sk := pctList([]float64{u}), pctList([]float64{skew})
				fig.Categories = append(fig.Categories, load+", "+sk)
				for ai := range decide1000Arms {
					g := gain(ui, ki, ai, -1, ai, decide1000V)
					gt.Rows = append(gt.Rows, []string{load, sk, name(ai), fmtCI(metric(ui, ki, ai, -1, jct), ""), fmtCI(metric(ui, ki, ai, -1, unfin), "%"), fmtCI(g, "%"), fmtCI(metric(ui, ki, ai, decide1000V, unfin), "%")})
					rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide1000-%s-%s-%d", load, sk, decide1000Arms[ai]), Source: "batchd (hopper-decide, 1,000 slots)",
						Metric: fmt.Sprintf("reduction in mean JCT of Hopper (V = %s) vs SRPT, both %s, task skew %s, at %s, 1,000 slots", V, name(ai), sk, load),
						Paper:  "(Hopper §7: Hopper beats its SRPT baseline)", Ours: g, Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
				}
				row := []string{load, sk, fmtCI(metric(ui, ki, decide1000Default, decide1000V, jct), "")}
				for _, v := range []int{-1, decide1000V} {
					for ai := range decide1000Arms {
						if v >= 0 && ai == decide1000Default {
							continue
						}
						g := gain(ui, ki, decide1000Default, decide1000V, ai, v)
						row = append(row, fmtCI(g, "%"))
						who := "SRPT"
						if v >= 0 {
							who = "Hopper"
							se := &fig.Series[len(fig.Series)-1]
							if ai < decide1000Default {
								se = &fig.Series[ai]
							}
							se.X, se.Y = append(se.X, float64(len(se.X))), append(se.Y, g.Mean)
							se.YLo, se.YHi = append(se.YLo, g.Mean-g.HalfWidth), append(se.YHi, g.Mean+g.HalfWidth)
						}
						rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide1000-default-%s-%s-%s-%d", load, sk, who, decide1000Arms[ai]), Source: "batchd (hopper-decide, 1,000 slots)",
							Metric: fmt.Sprintf("reduction in mean JCT of %s, %s vs the server's default, task skew %s, at %s, 1,000 slots", who, name(ai), sk, load),
							Paper:  "(which default: positive is faster than the server's default)", Ours: g, Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
					}
				}
				dt.Rows = append(dt.Rows, row)
			}
		}
		rep.Figures = append(rep.Figures, fig)
		rep.Tables = append(rep.Tables, gt, dt)
		return rep
	}
	return ps, analyze, nil
}
