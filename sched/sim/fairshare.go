// The fair-share experiment: what splitting the requested class between
// users (sched.Config.FairShare) costs and buys.

package sim

import (
	"context"
	"fmt"
	"math"

	"batchd/sched"
)

// fairLoads are the offered loads of the fair-share experiment: below
// saturation, near it, and a flood beyond it.
var fairLoads = []float64{0.8, 1.2, 1.5}

// fairShareExp runs a cluster shared by one flooding user (one-task jobs,
// 60% of the offered work) and four ordinary users (the cluster workload's
// job sizes), under SRPT across users and with fair share, at offered
// loads where the flood alone stays below the slots, nears them and
// exceeds them, and reports each class's mean job completion time, the
// share of its jobs left unfinished, and the ordinary users' gain.
func fairShareExp(ctx context.Context, o Options) ([]Params, func([]Result) Report, error) {
	base := Defaults(WorkloadCluster)
	base.Slots, base.SlotsPerWorker = 100, 10
	base.JobSizeMax = 200
	base.FloodWork, base.OrdinaryUsers = 0.75, 4
	base.KeepJobs = true
	if o.Quick {
		base.Warmup, base.Duration, base.Drain = 300, 1200, 3600
	}
	// Offered load as the cluster experiment sets it: from the slot-seconds
	// a task really occupies (speculation cuts the Pareto tail short).
	base, err := CalibrateWork(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	seeds := o.seeds()
	arms := []bool{false, true}
	var ps []Params
	for k := range seeds {
		for _, u := range fairLoads {
			for _, fair := range arms {
				p := base
				p.Utilization = u
				p.Seed = int64(k + 1)
				p.Sched = sched.Config{FairShare: fair}
				ps = append(ps, p)
			}
		}
	}
	at := func(rs []Result, k, li int, fair bool) Result {
		return rs[(k*len(fairLoads)+li)*len(arms)+boolIndex(fair)]
	}
	analyze := func(rs []Result) Report {
		rep := Report{Title: "Fair share between users: one user's flood of one-task jobs against four ordinary users"}
		rep.Setup = fmt.Sprintf("Cluster workload on %d slots (%d per worker) at offered loads %v; the flooding user submits one-task jobs carrying %.0f%% of the offered work, %d ordinary users the rest with job sizes ~ bounded Pareto(α=%g) on [1, %d]; copy durations Pareto(β=%g, x_m=%gs), offered load from the calibrated %.1f slot-seconds a task occupies (CalibrateWork); hopper+grass, srpt×fcfs; %s warm-up, %s measured, jobs still running %s after the window count as unfinished; %d seeds, the two configurations of a seed and load on the same random numbers. Mean completion time of the jobs that finished; the gain is SRPT-across-users' mean over fair share's, per seed; intervals are Student's t over seeds.",
			base.Slots, base.SlotsPerWorker, fairLoads, 100*base.FloodWork, base.OrdinaryUsers, base.JobSizeAlpha, base.JobSizeMax, base.Beta, base.TaskScale, base.WorkPerTask, days(base.Warmup), days(base.Duration), days(base.Drain), seeds)
		jct := func(r Result, flood bool) float64 {
			s, n := 0.0, 0
			for _, j := range r.Jobs {
				if j.Flood == flood {
					s += j.Response
					n++
				}
			}
			if n == 0 {
				return math.NaN()
			}
			return s / float64(n)
		}
		names := map[bool]string{false: "SRPT across users", true: "fair share"}
		for li, u := range fairLoads {
			for _, fair := range arms {
				var ord, fl []float64
				for k := range seeds {
					r := at(rs, k, li, fair)
					ord = append(ord, jct(r, false))
					fl = append(fl, jct(r, true))
				}
				key := fmt.Sprintf("fair-%g-%v", u, fair)
				rep.Claims = append(rep.Claims,
					Claim{Key: key + "-ordinary", Source: fmt.Sprintf("load %g", u), Metric: "ordinary users' mean job completion time, " + names[fair], Paper: "—", Ours: Summarize(ord), Unit: "s"},
					Claim{Key: key + "-flood", Source: fmt.Sprintf("load %g", u), Metric: "flooding user's mean job completion time, " + names[fair], Paper: "—", Ours: Summarize(fl), Unit: "s"})
			}
			for _, fair := range arms {
				var un []float64
				for k := range seeds {
					r := at(rs, k, li, fair)
					n := 0
					for _, j := range r.Jobs {
						if !j.Flood {
							n++
						}
					}
					uo := r.Unfinished - r.UnfinishedFlood
					un = append(un, 100*float64(uo)/float64(max(n+uo, 1)))
				}
				rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("fair-%g-%v-unfinished", u, fair), Source: fmt.Sprintf("load %g", u), Metric: "ordinary users' jobs unfinished at the end, " + names[fair], Paper: "—", Ours: Summarize(un), Unit: "%"})
			}
			var gain, cost []float64
			for k := range seeds {
				gain = append(gain, ratio(jct(at(rs, k, li, false), false), jct(at(rs, k, li, true), false)))
				cost = append(cost, ratio(jct(at(rs, k, li, true), true), jct(at(rs, k, li, false), true)))
			}
			rep.Claims = append(rep.Claims,
				Claim{Key: fmt.Sprintf("fair-%g-gain", u), Source: fmt.Sprintf("load %g", u), Metric: "ordinary users: completion time without fair share / with", Paper: "—", Ours: Summarize(gain), Unit: "×"},
				Claim{Key: fmt.Sprintf("fair-%g-cost", u), Source: fmt.Sprintf("load %g", u), Metric: "flooding user: completion time with fair share / without", Paper: "—", Ours: Summarize(cost), Unit: "×"})
		}
		return rep
	}
	return ps, analyze, nil
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
