// The hopper-fig3 experiment: Hopper Fig. 3's worked example.

package sim

import (
	"fmt"
	"math"
	"slices"

	"batchd/sched"
)

// hopperFig3 is Hopper's Fig. 3: one job of T tasks alone on a cluster of
// f·T slots, its completion time against f, under LATE (as in the paper's
// figure) and GRASS, for β = 1.259 and 1.5. Hopper's virtual size rests on
// a knee at f = 2/β: below it an extra slot is worth much, above it
// little. Every run at one seed draws the same copy durations (they are
// keyed by task and copy number), so per-seed slopes compare like with
// like.
func hopperFig3(o Options) ([]Params, func([]Result) Report) {
	T, seeds := 200, 4*o.seeds()
	if o.Quick {
		T, seeds = 50, 4
	}
	betas := []float64{1.259, 1.5}
	modes := []struct {
		name string
		spec sched.Speculation
	}{{"LATE", sched.SpecBestEffortLATE}, {"GRASS", sched.SpecGRASS}}
	// fracs are the slots per task of each β's grid; 2/β is one of them.
	fracs := func(beta float64) []float64 {
		fs := []float64{0.25, 0.5, 0.75, 1, 1.25, 2 / beta, 2, 2.5, 3}
		slices.Sort(fs)
		return fs
	}
	type key struct{ b, m, f, seed int }
	index := map[key]int{}
	var ps []Params
	for bi, beta := range betas {
		for mi, m := range modes {
			for fi, f := range fracs(beta) {
				for seed := range seeds {
					p := Defaults(WorkloadCluster)
					p.SingleJob, p.Warmup, p.Beta = T, -1, beta
					p.Slots = max(1, int(math.Round(f*float64(T))))
					p.Seed = int64(seed + 1)
					p.Sched = cfg(sched.PolicySRPTxFCFS, m.spec)
					index[key{bi, mi, fi, seed}] = len(ps)
					ps = append(ps, p)
				}
			}
		}
	}
	analyze := func(rs []Result) Report {
		rep := Report{Title: "Hopper Fig. 3: one job's completion time against the slots it gets"}
		rep.Setup = fmt.Sprintf("One job of %d tasks alone on a cluster of f·%d slots (16 per worker), copy durations Pareto(x_m=10s, β), every copy an independent draw, exact progress reports at x_m·2^k; speculation best-effort LATE (at most one copy per task besides the original, GS's rule t_rem > t_new) or GRASS (RAS while more than two waves are queued, then GS with more copies in the last wave); %d seeds, common random numbers across f.", T, T, seeds)
		for bi, beta := range betas {
			fs := fracs(beta)
			knee := slices.Index(fs, 2/beta)
			one, last := slices.Index(fs, 1), len(fs)-1
			f := Figure{ID: fmt.Sprintf("hopper-fig3-beta%g", beta), Kind: FigureLines, Title: fmt.Sprintf("One job of %d tasks, β = %g: JCT against slots per task (knee expected at 2/β = %.2f)", T, beta, 2/beta), XLabel: "slots / tasks", YLabel: "job completion time (s)"}
			f.Marks = []Mark{{X: 2 / beta, Label: fmt.Sprintf("where Hopper §4.1 expects the knee: 2/β = %.2f", 2/beta)}}
			tab := Table{Title: fmt.Sprintf("Job completion time (s, mean ± 95%% CI over %d seeds), one job of %d tasks, β = %g", seeds, T, beta), Header: []string{"slots / tasks"}}
			for _, m := range modes {
				tab.Header = append(tab.Header, m.name)
			}
			for mi, m := range modes {
				se := Series{Name: m.name}
				for fi, x := range fs {
					var j []float64
					for seed := range seeds {
						j = append(j, rs[index[key{bi, mi, fi, seed}]].MeanVisibleResponse)
					}
					su := Summarize(j)
					se.X, se.Y = append(se.X, x), append(se.Y, su.Mean)
					se.YLo, se.YHi = append(se.YLo, su.Mean-su.HalfWidth), append(se.YHi, su.Mean+su.HalfWidth)
				}
				f.Series = append(f.Series, se)
				var at1, atKnee []float64
				for seed := range seeds {
					jct := func(fi int) float64 { return rs[index[key{bi, mi, fi, seed}]].MeanVisibleResponse }
					if all := jct(0) - jct(last); all > 0 {
						at1 = append(at1, 100*(jct(0)-jct(one))/all)
						atKnee = append(atKnee, 100*(jct(0)-jct(knee))/all)
					}
				}
				rep.Claims = append(rep.Claims, Claim{Source: "Hopper §4.1, Fig. 3", Metric: fmt.Sprintf("share of the JCT gain from 0.25·T to 3·T slots already had at T slots, one %d-task job, β = %g, %s", T, beta, m.name), Paper: fmt.Sprintf("well below 100%% (a knee at 2/β = %.2f, not at 1)", 2/beta), Ours: Summarize(at1), Unit: "%",
					Note: fmt.Sprintf("at 2/β·T: %.1f%%; %d seeds", Summarize(atKnee).Mean, len(at1))})
			}
			for fi, x := range fs {
				row := []string{f2(x)}
				for mi := range modes {
					row = append(row, fmt.Sprintf("%s ± %s", sig(f.Series[mi].Y[fi]), sig(f.Series[mi].Y[fi]-f.Series[mi].YLo[fi])))
				}
				tab.Rows = append(tab.Rows, row)
			}
			rep.Figures = append(rep.Figures, f)
			rep.Tables = append(rep.Tables, tab)
		}
		return rep
	}
	return ps, analyze
}
