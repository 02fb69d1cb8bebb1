// The petrou-2x experiment: are the Petrou sweep's means where requested
// work alone fills the server stable when the measured window doubles?

package sim

import (
	"fmt"
	"slices"
)

// petrouOverload runs the sweep's points where requested work alone fills
// the server (requestedFills) under the arms of the Fig. 4–6 comparisons,
// with the sweep's window (1×) and with the measured window doubled (2×,
// the same warm-up), each point and seed with the sweep's random numbers
// in both, and reports the comparisons' mean improvements and every arm's
// mean visible response side by side, with the per-seed change. In that
// group the server is busy with requested work most of the time, so a mean
// that drifted with the run's length would say the window is too short
// for the group's queues; a closed loop of N users cannot queue without
// bound, so the means should hold.
func petrouOverload(o Options) ([]Params, func([]Result) Report) {
	full := PetrouGrid()
	stride := max(o.SweepStride, 1)
	var idx []int // indexes into full
	for i := 0; i < len(full); i += stride {
		if requestedFills(full[i]) {
			idx = append(idx, i)
		}
	}
	if o.Quick {
		idx = idx[:min(len(idx), 3)]
	}
	seeds := o.sweepSeeds()
	var arms []sweepArm
	for _, a := range sweepArms {
		if slices.ContainsFunc(sweepCmps, func(c sweepCmp) bool { return c.base == a.label || c.ours == a.label }) {
			arms = append(arms, a)
		}
	}
	lengths := []float64{1, 2}
	var ps []Params
	for _, l := range lengths {
		for k := range seeds {
			for _, j := range idx {
				for _, a := range arms {
					p := full[j]
					if o.Quick {
						p.Warmup, p.Duration = 0.5*Day, 2*Day
					}
					p.Duration *= l
					p.Seed = sweepSeed(j, k, seeds)
					a.apply(&p)
					ps = append(ps, p)
				}
			}
		}
	}
	analyze := func(rs []Result) Report {
		armAt := map[string]int{}
		for i, a := range arms {
			armAt[a.label] = i
		}
		at := func(li, k, pt int, arm string) *Result {
			return &rs[((li*seeds+k)*len(idx)+pt)*len(arms)+armAt[arm]]
		}
		// perSeed is, for each seed, f's mean over the points.
		perSeed := func(f func(k, pt int) float64) []float64 {
			out := make([]float64, seeds)
			for k := range seeds {
				var xs []float64
				for pt := range idx {
					xs = append(xs, f(k, pt))
				}
				out[k] = mean(xs)
			}
			return out
		}
		diff := func(a, b []float64) []float64 {
			out := make([]float64, len(a))
			for i := range a {
				out[i] = b[i] - a[i]
			}
			return out
		}
		p0 := full[idx[0]]
		rep := Report{Title: "Petrou sweep, requested work alone fills the server: 1× and 2× measured windows"}
		rep.Setup = fmt.Sprintf("The Petrou sweep's %d points where requested work alone fills the server (every %d-th point of the grid, N·service/(service+think) ≥ 1), under the %d configurations of the Fig. 4–6 comparisons in the paper's reading, with %s warm-up and %s measured (1×, the sweep's window) and %s measured (2×); each point and seed has the sweep's random numbers at both lengths, %d seeds per point. Which tasks count, as in the sweep: every task requested inside the measured window, delivered or not. Means over the points per seed, then Student's t over seeds; the change is 2× less 1× per seed (paired).",
			len(idx), stride, len(arms), days(p0.Warmup), days(p0.Duration), days(2*p0.Duration), seeds)
		ct := Table{Title: fmt.Sprintf("Mean improvement (per-seed ratios) at 1× and 2×, and the change (95%% CI over %d seeds)", seeds),
			Header: []string{"ours", "baseline", "metric", "1×", "2×", "2× less 1×"}}
		for _, c := range sweepCmps {
			var ms [2][]float64
			for li := range lengths {
				ms[li] = perSeed(func(k, pt int) float64 {
					return ratio(at(li, k, pt, c.base).Value(c.m), at(li, k, pt, c.ours).Value(c.m))
				})
			}
			d := Summarize(diff(ms[0], ms[1]))
			ct.Rows = append(ct.Rows, []string{c.ours, c.base, string(c.m), fmtCI(Summarize(ms[0]), "×"), fmtCI(Summarize(ms[1]), "×"), fmtCI(d, "")})
			rep.Claims = append(rep.Claims, Claim{Key: "overload-2x-" + c.key, Source: "batchd (Petrou sweep, 2× window)",
				Metric: fmt.Sprintf("change in mean improvement in %s, %s over %s, %d points where requested work fills the server, 2× against 1× measured window", c.m, c.ours, c.base, len(idx)),
				Paper:  "0 within the interval (stable means)", Ours: d, Unit: "×", Note: "paired seeds", Detail: true})
		}
		mt := Table{Title: fmt.Sprintf("Mean visible response (s) per configuration at 1× and 2×, and 2× over 1× (95%% CI over %d seeds)", seeds),
			Header: []string{"configuration", "1×", "2×", "2× over 1×"}}
		for _, a := range arms {
			var ms [2][]float64
			for li := range lengths {
				ms[li] = perSeed(func(k, pt int) float64 { return at(li, k, pt, a.label).MeanVisibleResponse })
			}
			r := make([]float64, seeds)
			for k := range r {
				r[k] = ms[1][k] / ms[0][k]
			}
			mt.Rows = append(mt.Rows, []string{a.label, fmtCI(Summarize(ms[0]), ""), fmtCI(Summarize(ms[1]), ""), fmtCI(Summarize(r), "×")})
		}
		rep.Tables = append(rep.Tables, ct, mt)
		return rep
	}
	return ps, analyze
}
