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
	fmt.Println("| workload | speculation | jobs (live) | mean JCT live (s) | sim (s) | sim + overheads (s) | sim + live (s) | vs best-effort LATE, live | sim | sim + overheads | sim + live |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, wl := range t.workloads {
		late := map[int64]outcome{}
		for _, r := range all {
			if r.workload == wl && r.mode == "best-effort-late" {
				late[r.seed] = r
			}
		}
		for _, md := range t.modes {
			var jobs, v [4][]float64
			var g [4][]float64
			for _, r := range rowOf(all, wl, md) {
				jobs[0] = append(jobs[0], float64(r.live.Requests))
				for i, x := range r.jcts() {
					v[i] = append(v[i], x)
				}
				if b, ok := late[r.seed]; ok {
					bx := b.jcts()
					for i, x := range r.jcts() {
						g[i] = append(g[i], 100*(x/bx[i]-1))
					}
				}
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, md, ci(jobs[0], "%.0f"), ci(v[0], "%.2f"), ci(v[1], "%.2f"), ci(v[2], "%.2f"), ci(v[3], "%.2f"),
				ci(g[0], "%+.0f%%"), ci(g[1], "%+.0f%%"), ci(g[2], "%+.0f%%"), ci(g[3], "%+.0f%%"))
		}
	}

	fmt.Println("\nβ (the scheduler's Hill fit at the end) and speculative copies started, with the recorded latency (median and 90th percentile) and overhead.")
	fmt.Println()
	fmt.Println("| workload | speculation | β live | β sim | β sim + overheads | β sim + live | spec. copies live | sim | sim + overheads | sim + live | latency median (s) | latency q90 (s) | overhead (s) |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, wl := range t.workloads {
		for _, md := range t.modes {
			var b, sp [4][]float64
			var lat, q90, ovh []float64
			for _, r := range rowOf(all, wl, md) {
				b[0], sp[0] = append(b[0], r.liveBeta), append(sp[0], float64(r.liveSpec))
				for i, x := range []sim.Result{r.sim, r.simLat, r.simLive} {
					b[i+1], sp[i+1] = append(b[i+1], x.Beta), append(sp[i+1], float64(x.SpeculativeStarted))
				}
				lat, q90, ovh = append(lat, r.latency), append(q90, r.latQ90), append(ovh, r.overhead)
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, md, ci(b[0], "%.2f"), ci(b[1], "%.2f"), ci(b[2], "%.2f"), ci(b[3], "%.2f"),
				ci(sp[0], "%.0f"), ci(sp[1], "%.0f"), ci(sp[2], "%.0f"), ci(sp[3], "%.0f"), ci(lat, "%.3f"), ci(q90, "%.3f"), ci(ovh, "%.3f"))
		}
	}

	fmt.Println("\nPaired test, per seed live / sim of the mean job completion time: geometric mean ratio, its 95% interval (Student's t on the log ratios), seeds above / below 1, two-sided sign test p; \"consistent\" when the interval contains 1.")
	fmt.Println()
	fmt.Println("| workload | speculation | seeds | live / sim | above / below | sign p | verdict | live / (sim + overheads) | above / below | sign p | verdict | live / (sim + live) | above / below | sign p | verdict |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |")
	// Per seed, the mean log ratio over the speculative rows of every
	// workload: one paired sample per (workload, seed).
	type wlSeed struct {
		wl   string
		seed int64
	}
	specLogs := map[wlSeed][3][]float64{}
	for _, wl := range t.workloads {
		for _, md := range t.modes {
			var rs [3][]float64
			for _, r := range rowOf(all, wl, md) {
				j := r.jcts()
				k := wlSeed{wl, r.seed}
				v := specLogs[k]
				for i := range rs {
					rs[i] = append(rs[i], j[0]/j[i+1])
					if md != "none" {
						v[i] = append(v[i], math.Log(j[0]/j[i+1]))
					}
				}
				if md != "none" {
					specLogs[k] = v
				}
			}
			p0, p1, p2 := pairedTest(rs[0]), pairedTest(rs[1]), pairedTest(rs[2])
			fmt.Printf("| %s | %s | %d | %s | %s | %s |\n", wl, md, p0.N, pairedCells(p0), pairedCells(p1), pairedCells(p2))
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
	var gs [3][]float64
	for _, k := range keys {
		v := specLogs[k]
		for i := range gs {
			gs[i] = append(gs[i], math.Exp(meanOf(v[i])))
		}
	}
	p0, p1, p2 := pairedTest(gs[0]), pairedTest(gs[1]), pairedTest(gs[2])
	fmt.Printf("| all | speculative rows (per workload and seed, geometric mean over modes) | %d | %s | %s | %s |\n", p0.N, pairedCells(p0), pairedCells(p1), pairedCells(p2))
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

// jcts is the mean job completion time live, sim, sim + overheads and
// sim + live.
func (r outcome) jcts() [4]float64 {
	return [4]float64{r.live.MeanVisibleResponse, r.sim.MeanVisibleResponse, r.simLat.MeanVisibleResponse, r.simLive.MeanVisibleResponse}
}
