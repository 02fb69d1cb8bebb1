// The mixed experiment: batchactive users whose requests are multi-task
// jobs with stragglers, under an ablation of the scheduler.

package sim

import (
	"fmt"

	"batchd/sched"
)

// mixedVariants is the ablation of the mixed workload. The first row is
// the default (all three: srpt×fcfs, hopper+grass, preemptive SRPT); rows
// marked non-preemptive run SRPT over jobs without preemption.
var mixedVariants = []struct {
	name string
	pol  sched.Policy
	spec sched.Speculation
	pre  bool // Config.PreemptRequested
}{
	{"srpt×fcfs + hopper+grass (all three)", sched.PolicySRPTxFCFS, sched.SpecHopperGRASS, true},
	{"srpt×fcfs + best-effort LATE", sched.PolicySRPTxFCFS, sched.SpecBestEffortLATE, true},
	{"srpt×fcfs, no speculation", sched.PolicySRPTxFCFS, sched.SpecNone, true},
	{"interactive-srpt + hopper+grass", sched.PolicyInteractiveSRPT, sched.SpecHopperGRASS, true},
	{"batch-srpt-task + hopper+grass", sched.PolicyBatchSRPTTask, sched.SpecHopperGRASS, true},
	{"batch-srpt + hopper+grass", sched.PolicyBatchSRPT, sched.SpecHopperGRASS, true},
	{"fcfs×fcfs + hopper+grass", sched.PolicyFCFSxFCFS, sched.SpecHopperGRASS, true},
	{"interactive-srpt + best-effort LATE (no batchactive, no Hopper)", sched.PolicyInteractiveSRPT, sched.SpecBestEffortLATE, true},
	{"srpt×fcfs + hopper+grass, non-preemptive SRPT", sched.PolicySRPTxFCFS, sched.SpecHopperGRASS, false},
	{"interactive-srpt + hopper+grass, non-preemptive SRPT", sched.PolicyInteractiveSRPT, sched.SpecHopperGRASS, false},
	{"batch-srpt-task + hopper+grass, non-preemptive SRPT", sched.PolicyBatchSRPTTask, sched.SpecHopperGRASS, false},
	{"batch-srpt + hopper+grass, non-preemptive SRPT", sched.PolicyBatchSRPT, sched.SpecHopperGRASS, false},
}

func mixedExp(o Options) ([]Params, func([]Result) Report) {
	seeds := o.seeds()
	base := Defaults(WorkloadMixed)
	if o.Quick {
		seeds = 2
		base.Warmup, base.Duration, base.JobSizeMax = 600, 3*3600, 100
	}
	var ps []Params
	for _, v := range mixedVariants {
		for seed := range seeds {
			p := base
			p.Seed = int64(seed + 1)
			p.Sched = cfg(v.pol, v.spec)
			p.Sched.PreemptRequested = v.pre
			p.SetSizePerSet = true // the default
			ps = append(ps, p)
		}
	}
	perSet := "for every set"
	if o.SetSizePerUser {
		perSet = "once per user"
	}
	analyze := func(rs []Result) Report {
		rep := Report{Title: "Mixed workload: batchactive users whose requests are multi-task jobs with stragglers (ablation)"}
		rep.Setup = fmt.Sprintf("%d users in Petrou's closed loop on %d slots: each set holds 1..%d jobs (uniform, drawn %s), each job 1..%d tasks (bounded Pareto α=%g, mean %.1f); a request asks for one whole job; think %g s (exp.); change prob. 0 to %g; copy durations Pareto(x_m=%gs, β=%g), every copy an independent draw; %gs warm-up, %gs measured; %d seeds. Rows not marked non-preemptive run preemptive SRPT in the requested class (the default). Visible response time of a request = max(0, last task's result − request).",
			base.Users, base.Slots, base.SetSizeMax, perSet, base.JobSizeMax, base.JobSizeAlpha, base.meanJobSize(), base.ThinkMean, base.ChangeProbMax, base.TaskScale, base.Beta, base.Warmup, base.Duration, seeds)
		t := Table{Title: "Ablation (mean ± 95% CI over seeds)", Header: []string{"scheduler", "visible response (s)", "visible slowdown", "requests/run", "load", "waste (slot-h)", "speculative copies"}}
		f := Figure{ID: "mixed-ablation", Kind: FigureBars, Title: "Mixed workload: mean visible response time by scheduler", XLabel: "scheduler", YLabel: "mean visible response (s)"}
		s := Series{Name: "mean visible response"}
		var full Summary
		var fullV []float64
		for vi, v := range mixedVariants {
			var rv, sl, rq, ld, ws, sp []float64
			for seed := range seeds {
				r := rs[vi*seeds+seed]
				rv, sl, rq, ld, ws, sp = append(rv, r.MeanVisibleResponse), append(sl, r.MeanVisibleSlowdown), append(rq, float64(r.Requests)), append(ld, r.Load), append(ws, r.WasteSlotSeconds/3600), append(sp, float64(r.SpeculativeStarted))
			}
			su := Summarize(rv)
			if vi == 0 {
				full, fullV = su, rv
			}
			t.Rows = append(t.Rows, []string{v.name, fmt.Sprintf("%s ± %s", sig(su.Mean), sig(su.HalfWidth)), f3(mean(sl)), f1(mean(rq)), f3(mean(ld)), f1(mean(ws)), f1(mean(sp))})
			cat := shortName(v.pol, v.spec)
			if !v.pre {
				cat += " (non-pre.)"
			}
			f.Categories = append(f.Categories, cat)
			s.X, s.Y = append(s.X, float64(vi)), append(s.Y, su.Mean)
			s.YLo, s.YHi = append(s.YLo, su.Mean-su.HalfWidth), append(s.YHi, su.Mean+su.HalfWidth)
			if vi > 0 {
				var imp []float64
				for seed := range seeds {
					imp = append(imp, rs[vi*seeds+seed].MeanVisibleResponse/fullV[seed])
				}
				rep.Claims = append(rep.Claims, Claim{Source: "batchd (mixed)", Metric: "improvement in mean visible response of srpt×fcfs + hopper+grass over " + v.name, Paper: "> 1 (no paper measured this)", Ours: Summarize(imp), Unit: "×", Note: "per-seed ratio, common random numbers"})
			}
		}
		_ = full
		f.Series = append(f.Series, s)
		rep.Tables = append(rep.Tables, t)
		rep.Figures = append(rep.Figures, f)
		return rep
	}
	return ps, analyze
}
