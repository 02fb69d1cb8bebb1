package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"batchd/sched/sim"
)

// table is what printTable prints: the runs' configuration and the rows'
// order.
type table struct {
	meta             record // Slots, Workers, Policy, Beta, Scale, Limit, Arrivals
	workloads, modes []string
	progress         progressModel
}

func tableOf(meta record, wls, modes []string, pm progressModel) table {
	return table{meta: meta, workloads: wls, modes: modes, progress: pm}
}

// printTable prints the means with their intervals over seeds, then the
// paired verdict per row and over the speculative rows.
func printTable(t table, all []outcome) {
	seeds := map[int64]bool{}
	for _, r := range all {
		seeds[r.seed] = true
	}
	m := t.meta
	fmt.Printf("\n%d slots (%d workers), policy %s, copies Pareto(β %g, scale %g s) capped at %g s, %v of arrivals, %d seeds; replay progress: %s; 95%% CI over seeds (Student's t)\n\n",
		m.Slots, m.Workers, m.Policy, m.Beta, m.Scale, m.Limit, m.Arrivals, len(seeds), t.progress)
	fmt.Println("| workload | speculation | jobs (live) | mean JCT live (s) | mean JCT sim (s) | sim + overheads (s) | vs best-effort LATE, live | vs best-effort LATE, sim | vs best-effort LATE, sim + overheads | β live | β sim | β sim + overheads | spec. copies live | spec. copies sim | spec. copies sim + overheads | latency (s) | overhead (s) |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, wl := range t.workloads {
		late := map[int64]outcome{}
		for _, r := range all {
			if r.workload == wl && r.mode == "best-effort-late" {
				late[r.seed] = r
			}
		}
		for _, md := range t.modes {
			var lv, sv, gl, gs, bl, bs, spl, sps, jobs, slv, gsl, lat, bso, spso, ovh []float64
			for _, r := range rowOf(all, wl, md) {
				lv, sv = append(lv, r.live.MeanVisibleResponse), append(sv, r.sim.MeanVisibleResponse)
				bl, bs = append(bl, r.liveBeta), append(bs, r.sim.Beta)
				spl, sps = append(spl, float64(r.liveSpec)), append(sps, float64(r.sim.SpeculativeStarted))
				jobs = append(jobs, float64(r.live.Requests))
				slv = append(slv, r.simLat.MeanVisibleResponse)
				lat, ovh = append(lat, r.latency), append(ovh, r.overhead)
				bso, spso = append(bso, r.simLat.Beta), append(spso, float64(r.simLat.SpeculativeStarted))
				if b, ok := late[r.seed]; ok {
					gl = append(gl, 100*(r.live.MeanVisibleResponse/b.live.MeanVisibleResponse-1))
					gs = append(gs, 100*(r.sim.MeanVisibleResponse/b.sim.MeanVisibleResponse-1))
					gsl = append(gsl, 100*(r.simLat.MeanVisibleResponse/b.simLat.MeanVisibleResponse-1))
				}
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, md, ci(jobs, "%.0f"), ci(lv, "%.2f"), ci(sv, "%.2f"),
				ci(slv, "%.2f"), ci(gl, "%+.0f%%"), ci(gs, "%+.0f%%"), ci(gsl, "%+.0f%%"), ci(bl, "%.2f"), ci(bs, "%.2f"), ci(bso, "%.2f"),
				ci(spl, "%.0f"), ci(sps, "%.0f"), ci(spso, "%.0f"), ci(lat, "%.3f"), ci(ovh, "%.3f"))
		}
	}

	fmt.Println("\nPaired test, per seed live / sim of the mean job completion time: geometric mean ratio, its 95% interval (Student's t on the log ratios), seeds above / below 1, two-sided sign test p; \"consistent\" when the interval contains 1.")
	fmt.Println()
	fmt.Println("| workload | speculation | seeds | live / sim | above / below | sign p | verdict | live / (sim + overheads) | above / below | sign p | verdict |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |")
	// Per seed, the mean log ratio over the speculative rows of every
	// workload: one paired sample per (workload, seed).
	type wlSeed struct {
		wl   string
		seed int64
	}
	specLogs := map[wlSeed][2][]float64{}
	for _, wl := range t.workloads {
		for _, md := range t.modes {
			var rs, rl []float64
			for _, r := range rowOf(all, wl, md) {
				a, b := r.live.MeanVisibleResponse/r.sim.MeanVisibleResponse, r.live.MeanVisibleResponse/r.simLat.MeanVisibleResponse
				rs, rl = append(rs, a), append(rl, b)
				if md != "none" {
					k := wlSeed{wl, r.seed}
					v := specLogs[k]
					v[0], v[1] = append(v[0], math.Log(a)), append(v[1], math.Log(b))
					specLogs[k] = v
				}
			}
			ps, pl := pairedTest(rs), pairedTest(rl)
			fmt.Printf("| %s | %s | %d | %s | %s |\n", wl, md, ps.N, pairedCells(ps), pairedCells(pl))
		}
	}
	keys := make([]wlSeed, 0, len(specLogs))
	for k := range specLogs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b wlSeed) int {
		if c := strings.Compare(a.wl, b.wl); c != 0 {
			return c
		}
		return int(a.seed - b.seed)
	})
	var gs, gl []float64
	for _, k := range keys {
		v := specLogs[k]
		gs, gl = append(gs, math.Exp(meanOf(v[0]))), append(gl, math.Exp(meanOf(v[1])))
	}
	ps, pl := pairedTest(gs), pairedTest(gl)
	fmt.Printf("| all | speculative rows (per workload and seed, geometric mean over modes) | %d | %s | %s |\n", ps.N, pairedCells(ps), pairedCells(pl))
}

// rowOf is the outcomes of one workload and mode, by seed.
func rowOf(all []outcome, wl, mode string) []outcome {
	var out []outcome
	for _, r := range all {
		if r.workload == wl && r.mode == mode {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b outcome) int { return int(a.seed - b.seed) })
	return out
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// pairedCells is a paired test's ratio, counts, sign p and verdict cells.
func pairedCells(p paired) string {
	if p.N < 2 {
		return fmt.Sprintf("%.3f | %d / %d | – | –", p.Mean, p.Above, p.Below)
	}
	v := "differs"
	if p.Consistent {
		v = "consistent"
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] | %d / %d | %.3g | %s", p.Mean, p.Lo, p.Hi, p.Above, p.Below, p.SignP, v)
}

func ci(xs []float64, f string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := sim.Summarize(xs)
	if s.N < 2 {
		return fmt.Sprintf(f, s.Mean)
	}
	return fmt.Sprintf(f, s.Mean) + " ± " + strings.TrimPrefix(strings.TrimSuffix(fmt.Sprintf(f, s.HalfWidth), "%"), "+")
}
