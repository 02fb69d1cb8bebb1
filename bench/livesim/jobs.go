package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"text/tabwriter"

	"batchd/sched"
	"batchd/sched/sim"
)

// jobs compares one kept run with its sim + live replay job by job
// (`livesim jobs -keep DIR -workload mixed -seed 1 -mode none`): per
// request, its response live and in the replay, its tasks' draws and the
// run times their winning copies reported live, and the run's copies
// whose report came later than their run time (their latency samples).
func jobs(args []string) error {
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	keep := fs.String("keep", "", "directory of records saved by `livesim -keep`")
	wl := fs.String("workload", "mixed", "workload")
	seed := fs.Int64("seed", 1, "seed")
	mode := fs.String("mode", "none", "speculation mode")
	lat := fs.Bool("latencies", false, "print the latency samples and suspensions instead")
	abl := fs.String("ablation", "sim + live", "the replay: sim + live or one of its ablations (livesim report -ablations names them)")
	progress := fs.String("progress", defaultProgress, progressHelp)
	pm, recs, err := parseKept(fs, args, progress, keep)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(r record) bool { return r.Workload == *wl && r.Seed == *seed && r.Mode == *mode })
	if i < 0 {
		return fmt.Errorf("no record %s-%s-%d in %q", *wl, *mode, *seed, *keep)
	}
	rec := recs[i]
	if *lat {
		dumpLatencies(rec)
		dumpSuspensions(rec)
		return nil
	}
	d := func(set sched.SetID, idx int32, k int) float64 {
		return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
	}
	tr := traceOf(rec)
	tr.CopyDuration = ownOverhead(rec, d)
	o := liveOptions(rec, &tr, pm)
	ai := slices.IndexFunc(ablations, func(a ablation) bool { return a.name == *abl })
	if ai < 0 {
		return fmt.Errorf("no ablation %q", *abl)
	}
	ablations[ai].opts(rec, &o, &tr)
	o.KeepJobs = true
	res, err := sim.Replay(context.Background(), &tr, tr.Config, o)
	if err != nil {
		return err
	}
	type key struct {
		set sched.SetID
		at  float64
	}
	rep := map[key]sim.JobResult{}
	for _, j := range res.Jobs {
		rep[key{sched.SetID(j.Set), math.Round((j.RequestedAt+tr.Start)*1e6) / 1e6}] = j
	}
	fmt.Printf("%s, replayed under %s, virtual factor %g, last-wave copies %d\n\n", rec.file(), tr.ConfigText, tr.Config.VirtualFactor, tr.Config.LastWaveCopies)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "set\trequested (s)\ttasks\tlive (s)\treplay (s)\treplay − live\tΣ draw (s)\tΣ live run (s)\tlongest draw\tlongest live run\tsuspended (s)\tcopies live\t")
	var sumL, sumR float64
	n := 0
	for si := range rec.Trace.Sets {
		st := &rec.Trace.Sets[si]
		groups := map[float64][]int{}
		var ats []float64
		for ti, tk := range st.Tasks {
			if tk.RequestedAt <= 0 {
				continue
			}
			if _, ok := groups[tk.RequestedAt]; !ok {
				ats = append(ats, tk.RequestedAt)
			}
			groups[tk.RequestedAt] = append(groups[tk.RequestedAt], ti)
		}
		for _, at := range ats {
			var maxExec, sd, sr, md, mr, susp float64
			done := true
			ncp := 0
			for _, ti := range groups[at] {
				tk := &st.Tasks[ti]
				ncp += len(tk.Copies)
				if tk.ExecutedAt <= 0 {
					done = false
					continue
				}
				maxExec = math.Max(maxExec, tk.ExecutedAt)
				for k, c := range tk.Copies {
					if c > 0 {
						sd, sr = sd+d(st.ID, tk.Index, k), sr+c
						md, mr = math.Max(md, d(st.ID, tk.Index, k)), math.Max(mr, c)
						break
					}
				}
			}
			for _, s := range rec.Suspended {
				if s.Set == st.ID && slices.Contains(groups[at], int(s.Index)) {
					susp += s.Seconds
				}
			}
			j, ok := rep[key{st.ID, math.Round(at*1e6) / 1e6}]
			if !done || !ok {
				continue
			}
			live := math.Max(0, maxExec-at)
			n++
			sumL, sumR = sumL+live, sumR+j.Response
			fmt.Fprintf(w, "%d\t%.2f\t%d\t%.2f\t%.2f\t%+.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n", st.ID, at-tr.Start, len(groups[at]), live, j.Response, j.Response-live, sd, sr, md, mr, susp, ncp)
		}
	}
	w.Flush()
	if n > 0 {
		fmt.Printf("\n%d jobs: mean live %.3f s, replay %.3f s (live / replay %.3f)\n", n, sumL/float64(n), sumR/float64(n), sumL/sumR)
	}
	return nil
}

// dumpLatencies prints rec's latency samples against their decision times.
func dumpLatencies(rec record) {
	t0 := rec.Trace.Start
	for i := range rec.Latencies {
		fmt.Printf("%.3f %.3f\n", rec.LatencyAt[i]-t0, rec.Latencies[i])
	}
}

// dumpSuspensions prints rec's suspended copies.
func dumpSuspensions(rec record) {
	for _, s := range rec.Suspended {
		fmt.Printf("set %d task %d %s suspended %.3f s\n", s.Set, s.Index, s.State, s.Seconds)
	}
}
