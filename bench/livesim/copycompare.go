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

// taskKey names one task.
type taskKey struct {
	set sched.SetID
	idx int32
}

// cpEnd is one copy of a task, live or replayed: its start decision and
// end (seconds from the task's request) and how it ended.
type cpEnd struct {
	start, end float64
	how        string  // won, killed, lost, ended (ran out, another won)
	req        float64 // the task's request (Unix seconds)
	lat        float64 // its latency: live, a winner's end − start − run − suspended (else NaN); replayed, the one it was given
}

// copies compares one kept run with its replay copy by copy (`livesim
// copies -keep DIR -workload cluster -seed 1 -mode grass`): for every task
// that had more than one copy live or in the replay, each copy's start and
// end from the task's request; then, over the run, when the second copy
// started and how often it won, live against the replay, and the live
// scheduler's latency estimate against the one its store's samples give.
func copies(args []string) error {
	fs := flag.NewFlagSet("copies", flag.ContinueOnError)
	keep := fs.String("keep", "", "directory of records saved by `livesim -keep`")
	wl := fs.String("workload", "cluster", "workload")
	seed := fs.Int64("seed", 1, "seed (0: every seed's run at once)")
	mode := fs.String("mode", "grass", "speculation mode")
	abl := fs.String("ablation", "sim + live", "the replay: sim + live or one of its ablations")
	all := fs.Bool("all", false, "print every task with more than one copy, not only the summary")
	from := fs.Float64("from", -1, "print every copy live and replayed that was running between -from and -to (seconds of the run), by start")
	to := fs.Float64("to", -1, "see -from")
	progress := fs.String("progress", defaultProgress, progressHelp)
	pm, recs, err := parseKept(fs, args, progress, keep)
	if err != nil {
		return err
	}
	var runs []record
	for _, r := range recs {
		if r.Workload == *wl && r.Mode == *mode && (r.Seed == *seed || *seed == 0) {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("no record %s-%s-%d in %q", *wl, *mode, *seed, *keep)
	}
	// With -seed 0, every seed's run at once: their tasks apart (a set's
	// id offset by its seed), their times apart (the runs ran one after
	// another).
	live, rep := map[taskKey][]cpEnd{}, map[taskKey][]cpEnd{}
	var lagLines []string
	for _, rec := range runs {
		if len(rec.Copies) == 0 {
			return fmt.Errorf("%s keeps no copies (a record made before they were kept)", rec.file())
		}
		l, r, repLag, err := copyEnds(rec, pm, *abl)
		if err != nil {
			return err
		}
		off := sched.SetID(0)
		if *seed == 0 {
			off = sched.SetID(rec.Seed << 32)
		}
		for k, cs := range l {
			live[taskKey{k.set + off, k.idx}] = cs
		}
		for k, cs := range r {
			rep[taskKey{k.set + off, k.idx}] = cs
		}
		lagLines = append(lagLines, lagComparison(rec, repLag))
	}
	rec := runs[0]
	if len(runs) > 1 {
		fmt.Printf("%d runs (%s, %s, seeds %d–%d) at once\n", len(runs), *wl, *mode, runs[0].Seed, runs[len(runs)-1].Seed)
	}
	var keys []taskKey
	for k, cs := range live {
		if len(cs) > 1 || len(rep[k]) > 1 {
			keys = append(keys, k)
		}
	}
	for k, cs := range rep {
		if len(cs) > 1 && len(live[k]) <= 1 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b taskKey) int {
		if a.set != b.set {
			return int(a.set - b.set)
		}
		return int(a.idx - b.idx)
	})
	if *from >= 0 {
		printWindow(live, rep, rec.Trace.Start+*from, rec.Trace.Start+*to, rec.Trace.Start)
		return nil
	}
	if *all {
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "set/task\tlive copies: start–end how\treplay copies: start–end how\t")
		for _, k := range keys {
			fmt.Fprintf(w, "%d/%d\t%s\t%s\t\n", k.set, k.idx, fmtCopies(live[k]), fmtCopies(rep[k]))
		}
		w.Flush()
		fmt.Println()
	}
	printCopySummary(live, rep)
	printGroups(live, rep)
	printFirstStarts(live, rep)
	printHeard(runs)
	printBusy(live, rep)
	printWinnerLatency(live, rep)
	printIdleQueued(live, rep, rec.Slots)
	printStartBatches(live, rep)
	printEndBatches(live, rep)
	for i, l := range lagLines {
		if len(runs) > 1 {
			fmt.Printf("seed %d: ", runs[i].Seed)
		}
		fmt.Print(l)
	}
	return nil
}

// copyEnds is every task's copies live (from the store's rows) and in
// rec's replay under ablation abl, each from the task's request.
func copyEnds(rec record, pm progressModel, abl string) (live, rep map[taskKey][]cpEnd, repLag []lagPoint, err error) {
	tr := traceOf(rec)
	reqAt := map[taskKey]float64{}
	for _, st := range tr.Sets {
		for _, tk := range st.Tasks {
			reqAt[taskKey{st.ID, tk.Index}] = tk.RequestedAt
		}
	}
	live = map[taskKey][]cpEnd{}
	for _, c := range rec.Copies {
		k := taskKey{c.Set, c.Index}
		lat := math.NaN()
		if c.State == "won" {
			lat = copyLatency(int64(c.Started*1e9), int64(c.Ended*1e9), c.Run, c.Suspended)
		}
		live[k] = append(live[k], cpEnd{c.Started - reqAt[k], c.Ended - reqAt[k], c.State, reqAt[k], lat})
	}
	d := func(set sched.SetID, idx int32, k int) float64 {
		return draw(rec.Seed, rec.Keys[set], idx, k, rec.Beta, rec.Scale, rec.Limit)
	}
	tr.CopyDuration = ownOverhead(rec, d)
	o := liveOptions(rec, &tr, pm)
	ai := slices.IndexFunc(ablations, func(a ablation) bool { return a.name == abl })
	if ai < 0 {
		return nil, nil, nil, fmt.Errorf("no ablation %q", abl)
	}
	ablations[ai].opts(rec, &o, &tr)
	rep = map[taskKey][]cpEnd{}
	o.OnCopy = func(c sim.CopyTrace) {
		k := taskKey{c.Set, c.Task}
		how := "ended"
		switch {
		case c.Won:
			how = "won"
		case c.Killed:
			how = "killed"
		}
		rep[k] = append(rep[k], cpEnd{c.Start - reqAt[k], c.End - reqAt[k], how, reqAt[k], c.Lat})
		repLag = append(repLag, lagPoint{c.End, c.SchedLag})
	}
	if _, err := sim.Replay(context.Background(), &tr, tr.Config, o); err != nil {
		return nil, nil, nil, err
	}
	for _, cs := range rep {
		slices.SortFunc(cs, func(a, b cpEnd) int { return cmpFloat(a.start, b.start) })
	}
	return live, rep, repLag, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func fmtCopies(cs []cpEnd) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += "  "
		}
		s += fmt.Sprintf("%.2f–%.2f %s", c.start, c.end, c.how)
	}
	return s
}

// printCopySummary prints, live against the replay: the tasks with a
// second copy, when it started after the first, how long the first had
// run when the task ended, how often the second copy won, and the tasks'
// completion times (from their request to their winner's end), over the
// tasks speculated on either side.
func printCopySummary(live, rep map[taskKey][]cpEnd) {
	type side struct {
		tasks, wins      int
		gap, done, done1 []float64
	}
	sum := func(m map[taskKey][]cpEnd, other map[taskKey][]cpEnd) side {
		var s side
		for k, cs := range m {
			if len(cs) < 2 && len(other[k]) < 2 {
				continue
			}
			if w := winner(cs); w >= 0 {
				s.done = append(s.done, cs[w].end)
			}
			if len(cs) < 2 {
				continue
			}
			s.tasks++
			s.gap = append(s.gap, cs[1].start-cs[0].start)
			if w := winner(cs); w > 0 {
				s.wins++
			}
			if w := winner(cs); w >= 0 && len(other[k]) >= 2 {
				s.done1 = append(s.done1, cs[w].end)
			}
		}
		return s
	}
	l, r := sum(live, rep), sum(rep, live)
	both := 0
	for k, cs := range live {
		if len(cs) >= 2 && len(rep[k]) >= 2 {
			both++
		}
	}
	fmt.Printf("tasks with a second copy: live %d, replay %d, both %d\n", l.tasks, r.tasks, both)
	fmt.Printf("second copy's start after the first's (s): live median %.3f mean %.3f, replay median %.3f mean %.3f\n",
		quantile(l.gap, 0.5), mean(l.gap), quantile(r.gap, 0.5), mean(r.gap))
	fmt.Printf("a later copy won: live %d of %d, replay %d of %d\n", l.wins, l.tasks, r.wins, r.tasks)
	fmt.Printf("task done after its request (s), tasks speculated on either side: live mean %.3f (n %d), replay mean %.3f (n %d)\n",
		mean(l.done), len(l.done), mean(r.done), len(r.done))
	fmt.Printf("the same, tasks speculated on both sides: live mean %.3f, replay mean %.3f (n %d)\n", mean(l.done1), mean(r.done1), both)
}

// winner is the index of cs's winning copy (-1: none).
func winner(cs []cpEnd) int {
	return slices.IndexFunc(cs, func(c cpEnd) bool { return c.how == "won" })
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// lagComparison says how the live scheduler's latency estimate (the
// server's metrics, polled) against the estimate the store's own samples
// give: the same rule (sched/lag.go: a high quantile of the last samples)
// over the winning copies' ended − started − run − suspended, in end
// order, as the replay's scheduler learns it.
func lagComparison(rec record, repLag []lagPoint) string {
	if len(rec.Lag) == 0 {
		return ""
	}
	type sample struct{ at, x float64 }
	var ss []sample
	for _, c := range rec.Copies {
		if c.State == "won" && c.Ended > c.Started {
			ss = append(ss, sample{c.Ended, copyLatency(int64(c.Started*1e9), int64(c.Ended*1e9), c.Run, c.Suspended)})
		}
	}
	slices.SortFunc(ss, func(a, b sample) int { return cmpFloat(a.at, b.at) })
	est := func(t float64) float64 {
		var xs []float64
		for _, s := range ss {
			if s.at > t {
				break
			}
			xs = append(xs, s.x)
		}
		if len(xs) > 256 {
			xs = xs[len(xs)-256:]
		}
		return quantile(xs, 0.9)
	}
	// The replay's scheduler's estimate at t: the last end it heard by t.
	repAt := func(t float64) float64 {
		i, _ := slices.BinarySearchFunc(repLag, t, func(p lagPoint, t float64) int { return cmpFloat(p.At, t) })
		if i == 0 {
			return math.NaN()
		}
		return repLag[i-1].Lag
	}
	var repL, repRatios []float64
	for _, p := range rec.Lag {
		if x := repAt(p.At); x > 0 && p.Lag > 0 {
			repL = append(repL, x)
			repRatios = append(repRatios, p.Lag/x)
		}
	}
	var ratios []float64
	var liveL, storeL []float64
	for _, p := range rec.Lag {
		if e := est(p.At); e > 0 && p.Lag > 0 {
			ratios = append(ratios, p.Lag/e)
			liveL, storeL = append(liveL, p.Lag), append(storeL, e)
		}
	}
	return fmt.Sprintf("latency estimate at its %d changes: live scheduler mean %.3f s, median %.3f; the store's samples' q90 then mean %.3f s, median %.3f; live / store median %.3f\n",
		len(ratios), mean(liveL), quantile(liveL, 0.5), mean(storeL), quantile(storeL, 0.5), quantile(ratios, 0.5)) +
		fmt.Sprintf("the replay's scheduler's estimate at the same moments: mean %.3f s, median %.3f; live / replay median %.3f\n", mean(repL), quantile(repL, 0.5), quantile(repRatios, 0.5))
}

// printGroups prints the tasks' completion times (request to the winner's
// end) live and in the replay, by where the task had a second copy: on
// both sides, live only, in the replay only, neither.
func printGroups(live, rep map[taskKey][]cpEnd) {
	names := []string{"both", "live only", "replay only", "neither"}
	var l, r, ls, rs0, lr, rr [4][]float64
	for k, cs := range live {
		rs := rep[k]
		wl, wr := winner(cs), winner(rs)
		if wl < 0 || wr < 0 {
			continue
		}
		g := 3
		switch {
		case len(cs) > 1 && len(rs) > 1:
			g = 0
		case len(cs) > 1:
			g = 1
		case len(rs) > 1:
			g = 2
		}
		l[g], r[g] = append(l[g], cs[wl].end), append(r[g], rs[wr].end)
		ls[g], rs0[g] = append(ls[g], cs[0].start), append(rs0[g], rs[0].start)
		lr[g], rr[g] = append(lr[g], cs[wl].end-cs[wl].start), append(rr[g], rs[wr].end-rs[wr].start)
	}
	for g, n := range names {
		fmt.Printf("tasks with a second copy %-12s n %4d  done live mean %.3f s, replay %.3f s, Σ live − replay %+.2f s; first start live %.3f, replay %.3f; winner's start to end live %.3f, replay %.3f\n",
			n+":", len(l[g]), mean(l[g]), mean(r[g]), float64(len(l[g]))*(mean(l[g])-mean(r[g])), mean(ls[g]), mean(rs0[g]), mean(lr[g]), mean(rr[g]))
	}
}

// printFirstStarts prints, per job size class, the time from a job's
// request to its first copy's start decision, live and in the replay.
func printFirstStarts(live, rep map[taskKey][]cpEnd) {
	type job struct{ l, r float64 }
	first := map[sched.SetID]*job{}
	sizes := map[sched.SetID]int{}
	for k, cs := range live {
		rs := rep[k]
		if len(cs) == 0 || len(rs) == 0 {
			continue
		}
		j := first[k.set]
		if j == nil {
			j = &job{math.Inf(1), math.Inf(1)}
			first[k.set] = j
		}
		j.l, j.r = math.Min(j.l, cs[0].start), math.Min(j.r, rs[0].start)
		sizes[k.set]++
	}
	var l, r [3][]float64
	for set, j := range first {
		c := 0
		switch n := sizes[set]; {
		case n >= 5:
			c = 2
		case n >= 2:
			c = 1
		}
		l[c], r[c] = append(l[c], j.l), append(r[c], j.r)
	}
	for c, n := range []string{"1 task", "2–4 tasks", "≥ 5 tasks"} {
		fmt.Printf("jobs of %-9s n %3d: request to first start live median %.3f mean %.3f s, replay median %.3f mean %.3f s\n", n, len(l[c]), quantile(l[c], 0.5), mean(l[c]), quantile(r[c], 0.5), mean(r[c]))
	}
}

// printBusy prints the slot-seconds the copies held (start decision to end
// or kill), by how they ended, live and in the replay.
func printBusy(live, rep map[taskKey][]cpEnd) {
	sum := func(m map[taskKey][]cpEnd) map[string][2]float64 {
		out := map[string][2]float64{}
		for _, cs := range m {
			for _, c := range cs {
				if c.end <= 0 && c.how != "won" {
					continue
				}
				x := out[c.how]
				x[0]++
				x[1] += c.end - c.start
				out[c.how] = x
			}
		}
		return out
	}
	l, r := sum(live), sum(rep)
	for _, how := range []string{"won", "killed", "lost", "ended"} {
		if l[how][0]+r[how][0] == 0 {
			continue
		}
		fmt.Printf("copies %-6s live %4.0f holding %7.2f slot-s, replay %4.0f holding %7.2f slot-s\n", how, l[how][0], l[how][1], r[how][0], r[how][1])
	}
}

// printIdleQueued prints the slot-seconds a slot stood free while a
// requested task waited for its first copy (∫ min(free slots, waiting
// tasks) dt), live and in the replay: time lost between a slot's freeing
// and the next start.
func printIdleQueued(live, rep map[taskKey][]cpEnd, slots int) {
	idle := func(m map[taskKey][]cpEnd) float64 {
		type ev struct {
			t         float64
			busy, que int
		}
		var evs []ev
		for _, cs := range m {
			if len(cs) == 0 || cs[0].req <= 0 {
				continue
			}
			r := cs[0].req
			evs = append(evs, ev{r, 0, 1}, ev{r + cs[0].start, 0, -1})
			for _, c := range cs {
				if c.end > c.start {
					evs = append(evs, ev{r + c.start, 1, 0}, ev{r + c.end, -1, 0})
				}
			}
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return cmpFloat(a.t, b.t) })
		busy, que, sum := 0, 0, 0.0
		for i, e := range evs {
			if i > 0 {
				sum += float64(max(0, min(slots-busy, que))) * (e.t - evs[i-1].t)
			}
			busy, que = busy+e.busy, que+e.que
		}
		return sum
	}
	fmt.Printf("slot-seconds free while a requested task waited for its first copy: live %.2f, replay %.2f\n", idle(live), idle(rep))
	fmt.Printf("  by the event that opened it: live%s; replay%s\n", fmtCauses(idleCauses(live, slots)), fmtCauses(idleCauses(rep, slots)))
}

// printWinnerLatency prints, over the tasks whose winner is the same copy
// number live and in the replay, that copy's latency live against the one
// the replay gave it, by whether it was the task's first copy.
func printWinnerLatency(live, rep map[taskKey][]cpEnd) {
	var l, r [2][]float64
	for k, cs := range live {
		rs := rep[k]
		wl, wr := winner(cs), winner(rs)
		if wl < 0 || wl != wr {
			continue
		}
		g := min(wl, 1)
		l[g], r[g] = append(l[g], cs[wl].lat), append(r[g], rs[wr].lat)
	}
	for g, n := range []string{"first copies", "later copies"} {
		fmt.Printf("winners, same copy on both sides, %s: n %d, latency live mean %.3f s, q90 %.3f; given in the replay mean %.3f s, q90 %.3f\n", n, len(l[g]), mean(l[g]), quantile(l[g], 0.9), mean(r[g]), quantile(r[g], 0.9))
	}
}

// printWindow prints every copy live and replayed that ran between a and b
// (Unix seconds), by start, with times from t0.
func printWindow(live, rep map[taskKey][]cpEnd, a, b, t0 float64) {
	type row struct {
		side       string
		k          taskKey
		start, end float64
		how        string
	}
	var rows []row
	for side, m := range map[string]map[taskKey][]cpEnd{"live": live, "replay": rep} {
		for k, cs := range m {
			for _, c := range cs {
				s, e := c.req+c.start, c.req+c.end
				if c.end <= 0 {
					e = math.Inf(1)
				}
				if s <= b && e >= a {
					rows = append(rows, row{side, k, s - t0, e - t0, c.how})
				}
			}
		}
	}
	slices.SortFunc(rows, func(x, y row) int {
		if x.side != y.side {
			return cmpFloat(float64(len(x.side)), float64(len(y.side)))
		}
		return cmpFloat(x.start, y.start)
	})
	for _, r := range rows {
		fmt.Printf("%-6s %d/%d\t%.2f–%.2f %s\n", r.side, r.k.set, r.k.idx, r.start, r.end, r.how)
	}
}

// printStartBatches prints how many copies each start decision started
// (copies stamped with the same decision time), live and in the replay.
func printStartBatches(live, rep map[taskKey][]cpEnd) {
	count := func(m map[taskKey][]cpEnd) (int, float64, int) {
		by := map[float64]int{}
		for _, cs := range m {
			for _, c := range cs {
				by[math.Round((c.req+c.start)*1e6)]++
			}
		}
		n, big := 0, 0
		for _, v := range by {
			n += v
			if v >= 3 {
				big += v
			}
		}
		return len(by), float64(n) / float64(len(by)), big
	}
	ld, lm, lb := count(live)
	rd, rm, rb := count(rep)
	fmt.Printf("start decisions: live %d (%.2f copies each, %d copies in decisions of 3 or more), replay %d (%.2f each, %d)\n", ld, lm, lb, rd, rm, rb)
}

// printEndBatches prints how many copy ends the scheduler heard at once
// (ends of copies that ran out, stamped with the same time), live and in
// the replay, and the median gap from one hearing of ends to the next
// while ends kept coming (under 0.1 s): live, the server hears a worker's
// reports in batches, one group commit each.
func printEndBatches(live, rep map[taskKey][]cpEnd) {
	count := func(m map[taskKey][]cpEnd) (int, float64, float64, float64) {
		by := map[float64]int{}
		for _, cs := range m {
			for _, c := range cs {
				if c.how == "killed" {
					continue
				}
				by[math.Round((c.req+c.end)*1e6)]++
			}
		}
		n, multi := 0, 0
		ts := make([]float64, 0, len(by))
		for t, v := range by {
			n += v
			if v >= 2 {
				multi += v
			}
			ts = append(ts, t/1e6)
		}
		slices.Sort(ts)
		var gaps []float64
		for i := 1; i < len(ts); i++ {
			if g := ts[i] - ts[i-1]; g < 0.1 {
				gaps = append(gaps, g)
			}
		}
		slices.Sort(gaps)
		med := math.NaN()
		if len(gaps) > 0 {
			med = gaps[len(gaps)/2]
		}
		return len(by), float64(n) / float64(len(by)), float64(multi) / float64(n), med
	}
	lh, lm, lf, lg := count(live)
	rh, rm, rf, rg := count(rep)
	fmt.Printf("end hearings: live %d (%.2f ends each, %.0f%% of ends heard with another, gap median %.4f s), replay %d (%.2f, %.0f%%, %.4f s)\n",
		lh, lm, 100*lf, lg, rh, rm, 100*rf, rg)
}
