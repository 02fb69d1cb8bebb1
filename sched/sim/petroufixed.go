// The petrou-fixed experiment: one parameter at a time varied around
// Petrou's Table 3 point (Figs. 7–14).

package sim

import (
	"fmt"
	"math"
	"strings"

	"batchd/sched"
)

// sweepVar is one parameter varied around Table 3's point.
type sweepVar struct {
	fig, name, xlabel string
	values            []float64
	set               func(p *Params, v float64)
	x                 func(v float64) float64 // the value on the x axis
	metrics           []Metric
	logX, logY        bool
}

func petrouFixed(o Options) ([]Params, func([]Result) Report) {
	vars := []sweepVar{
		{fig: "petrou-fig7-10", name: "number of users", xlabel: "number of users", values: seq(4, 16, 1),
			set: func(p *Params, v float64) { p.Users = int(v) }, x: id,
			metrics: []Metric{MetricResponse, MetricSlowdown, MetricThroughput, MetricLoad}},
		{fig: "petrou-fig11", name: "task set change probability", xlabel: "mean change probability (upper bound / 2)", values: []float64{0, 0.1, 0.2, 0.3, 0.4},
			set: func(p *Params, v float64) { p.ChangeProbMax = v }, x: func(v float64) float64 { return v / 2 },
			metrics: []Metric{MetricResponse}},
		{fig: "petrou-fig12", name: "tasks per task set (change prob. 0 to 0.1)", xlabel: "mean tasks per set ((1 + upper bound) / 2)", values: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
			set: func(p *Params, v float64) { p.SetSizeMax = int(v); p.ChangeProbMax = 0.1 }, x: func(v float64) float64 { return (1 + v) / 2 },
			metrics: []Metric{MetricSlowdown}, logX: true, logY: true},
		{fig: "petrou-fig13", name: "service time", xlabel: "mean service time (s)", values: []float64{60, 300, 600, 900, 1200, 1800, 2400, 3600},
			set: func(p *Params, v float64) { p.ServiceMean = v }, x: id,
			metrics: []Metric{MetricResponse}},
	}
	pols := []sched.Policy{sched.PolicyBatchSRPTTask, sched.PolicyInteractiveSRPT, sched.PolicySRPTxFCFS}
	seeds := o.seeds()
	if o.Quick {
		seeds = 2
		for i := range vars {
			v := vars[i].values
			vars[i].values = []float64{v[0], v[len(v)/2], v[len(v)-1]}
		}
	}
	type key struct{ v, val, pol int }
	index := map[key][]int{}
	var ps []Params
	for vi, sv := range vars {
		for xi, val := range sv.values {
			for pi, pol := range pols {
				for seed := range seeds {
					p := Defaults(WorkloadPetrou)
					if o.Quick {
						p.Warmup, p.Duration = 0.5*Day, 3*Day
					}
					sv.set(&p, val)
					p.Seed = int64(seed + 1)
					p.Sched = cfg(pol, sched.SpecNone)
					p.Sched.PreemptRequested, p.SetSizePerSet = true, true // the defaults
					k := key{vi, xi, pi}
					index[k] = append(index[k], len(ps))
					ps = append(ps, p)
				}
			}
		}
	}
	analyze := func(rs []Result) Report {
		rep := Report{Title: "Petrou Table 3 point with one parameter varied (Figs. 7–13)"}
		rep.Setup = fmt.Sprintf("Table 3: 8 users, change prob. 0 to 0.2, tasks per set 1 to 15, service 600 s, think 6,000 s (exponential); one parameter varied at a time; batch = batch-srpt-task (Petrou's batch SRPT, by task), interactive = interactive-srpt, batchactive = srpt×fcfs, all with the defaults (preemptive SRPT, tasks per set drawn for every set); %d seeds per bar (95%% CI); 2 warm-up days dropped, 14 measured.", seeds)
		summ := func(vi, xi, pi int, m Metric) Summary {
			var xs []float64
			for _, i := range index[key{vi, xi, pi}] {
				xs = append(xs, rs[i].Value(m))
			}
			return Summarize(xs)
		}
		for vi, sv := range vars {
			for _, m := range sv.metrics {
				f := Figure{ID: sv.fig + "-" + string(m), Kind: FigureBars, Title: fmt.Sprintf("Petrou: %s against %s", m, sv.name), XLabel: sv.xlabel, YLabel: metricLabel(m)}
				if sv.logY {
					// Log axes (Fig. 12 is log-linear): lines, not bars.
					f.Kind, f.LogX, f.LogY = FigureLines, sv.logX, true
				}
				t := Table{Title: fmt.Sprintf("%s against %s (mean ± 95%% CI over %d seeds)", m, sv.name, seeds), Header: []string{sv.xlabel}}
				for _, val := range sv.values {
					f.Categories = append(f.Categories, trimFloat(sv.x(val)))
				}
				for pi, pol := range pols {
					s := Series{Name: polLabel(pol)}
					t.Header = append(t.Header, polLabel(pol))
					for xi, val := range sv.values {
						su := summ(vi, xi, pi, m)
						s.X = append(s.X, sv.x(val))
						s.Y = append(s.Y, su.Mean)
						s.YLo = append(s.YLo, su.Mean-su.HalfWidth)
						s.YHi = append(s.YHi, su.Mean+su.HalfWidth)
					}
					f.Series = append(f.Series, s)
				}
				for xi, val := range sv.values {
					row := []string{trimFloat(sv.x(val))}
					for pi := range pols {
						su := summ(vi, xi, pi, m)
						row = append(row, fmt.Sprintf("%s ± %s", sig(su.Mean), sig(su.HalfWidth)))
					}
					t.Rows = append(t.Rows, row)
				}
				rep.Figures = append(rep.Figures, f)
				rep.Tables = append(rep.Tables, t)
			}
		}
		// Claim: batchactive best or tied at every user count (Figs. 7–10).
		for _, m := range []Metric{MetricResponse, MetricSlowdown, MetricThroughput} {
			best, strict, n := 0, 0, len(vars[0].values)
			var lost []string
			// The closest call: the user count where batchactive's lead over
			// the runner-up is smallest, relative to the runner-up's mean.
			closest, closeAt, closeOverlap, closeLoad := math.Inf(1), "", false, 0.0
			for xi, val := range vars[0].values {
				ba := summ(0, xi, 2, m)
				ok, okStrict := true, true
				for pi := 0; pi < 2; pi++ {
					o := summ(0, xi, pi, m)
					lead := (o.Mean - ba.Mean) / o.Mean
					if m == MetricThroughput {
						lead = (ba.Mean - o.Mean) / o.Mean
					}
					if lead < closest {
						closest, closeAt = lead, trimFloat(val)
						closeOverlap = math.Abs(ba.Mean-o.Mean) <= ba.HalfWidth+o.HalfWidth
						closeLoad = summ(0, xi, 2, MetricLoad).Mean
					}
					better := ba.Mean <= o.Mean || ba.Mean-ba.HalfWidth <= o.Mean+o.HalfWidth
					strictly := ba.Mean < o.Mean
					if m == MetricThroughput {
						better = ba.Mean >= o.Mean || ba.Mean+ba.HalfWidth >= o.Mean-o.HalfWidth
						strictly = ba.Mean > o.Mean
					}
					ok = ok && better
					okStrict = okStrict && strictly
				}
				if ok {
					best++
				}
				if okStrict {
					strict++
				} else {
					lost = append(lost, trimFloat(val))
				}
			}
			note := "strictly best on means at every user count"
			if len(lost) > 0 {
				note = "not strictly best on means at " + strings.Join(lost, ", ") + " users"
			}
			within := "outside"
			if closeOverlap {
				within = "within"
			}
			note += fmt.Sprintf("; closest at %s users: batchactive's lead over the runner-up is %.1f%% of its mean, %s the two 95%% intervals (server load %.3f)", closeAt, 100*closest, within, closeLoad)
			rep.Claims = append(rep.Claims, Claim{Source: "Petrou Figs. 7–9", Metric: fmt.Sprintf("user counts (of %d) where batchactive is strictly best on means in %s", n, m),
				Paper: "all (our target)", Ours: Summary{N: seeds, Mean: float64(strict)}, Unit: "", Note: note})
			rep.Claims = append(rep.Claims, Claim{Source: "Petrou Figs. 7–9", Metric: fmt.Sprintf("user counts (of %d) where batchactive is best or tied (CIs overlap) in %s", n, m),
				Paper: "all (\"nearly always\")", Ours: Summary{N: seeds, Mean: float64(best)}, Unit: "", Note: "counted over the bars of the user sweep"})
		}
		return rep
	}
	return ps, analyze
}
