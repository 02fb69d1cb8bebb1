// The hopper-decide experiment: Hopper against SRPT at 60% and 80% under
// the node-level straggler model, with and without skewed tasks, under
// three GRASS-or-cloning arms and three virtual sizes, paired over seeds.
// It chooses the server's speculation default.

package sim

import (
	"context"
	"fmt"
	"slices"

	"batchd/sched"
)

// decideArm is how copies are chosen, under SRPT and inside Hopper's
// shares alike.
type decideArm struct {
	name string
	spec sched.Speculation // the SRPT baseline's
	// perTask: GRASS with per-task estimates (Config.GrassPerTask).
	perTask bool
	// capped: at most grassCopyCap live copies of a task in its job's
	// last wave (Config.LastWaveCopies).
	capped bool
	// share: the last-wave bound follows the job's share of the slots,
	// at most max(grassCopyCap, ⌈S/(N·R)⌉) live copies of a task
	// (Config.LastWaveShare).
	share bool
	clone bool // cloning (Hopper §4.1's model) instead of GRASS
	// vs are the decideVs indices Hopper runs this arm at (nil: all).
	vs []int
}

// runsAt reports whether arm a runs Hopper at decideVs[v].
func (a decideArm) runsAt(v int) bool {
	return a.vs == nil || slices.Contains(a.vs, v)
}

// apply sets p's copy bounds for arm a.
func (a decideArm) apply(p *Params) {
	p.Sched.GrassPerTask = a.perTask
	if a.capped || a.share {
		p.Sched.LastWaveCopies = grassCopyCap
	}
	p.Sched.LastWaveShare = a.share
}

var decideArms = []decideArm{
	{name: "GRASS as written", spec: sched.SpecGRASS},
	{name: "GRASS capped", spec: sched.SpecGRASS, capped: true},
	// ⌊2/β·T⌋ lost to ⌈2/β·T⌉ in every cell for every arm when all ran
	// at it: the arms after the first two run without it, to keep the
	// report's time.
	{name: "GRASS per task, capped", spec: sched.SpecGRASS, perTask: true, capped: true, vs: []int{1, 2}},
	{name: "cloning", spec: sched.SpecClone, clone: true, vs: []int{1, 2}},
}

// shareArm is the arm the hopper-decide-share experiment adds to
// decideArms; the report leaves it out for its time.
var shareArm = decideArm{name: "GRASS share-capped", spec: sched.SpecGRASS, share: true, vs: []int{1, 2}}

// decideShareArms are decideArms and shareArm: the arms of the experiments
// hopper-decide-share and (some of them) hopper-decide-1000.
var decideShareArms = append(slices.Clip(decideArms), shareArm)

// decideV is one virtual size of Hopper's.
type decideV struct {
	name   string
	factor float64 // Config.VirtualFactor (0: 2/β, fitted online)
	floor  bool    // Config.VirtualFloor
}

var decideVs = []decideV{
	{name: "⌊2/β·T⌋", floor: true},
	{name: "⌈2/β·T⌉"},
	{name: fmt.Sprintf("%g·T", float64(wideVirtual)), factor: wideVirtual},
}

// decideDefault is the server's default before this experiment chose a new
// one (hopper+grass, GRASS as written, V = ⌈2/β·T⌉); the table of Hopper
// configurations is measured against it.
var decideDefault = [2]int{0, 1}

// serverDefault is the server's default the experiment chose (GRASS
// capped, V = 8·T); the last table sets its rivals at V = 8·T against it.
var serverDefault = [2]int{1, 2}

// decideSkews are the task skews (Params.TaskSkew) of the experiment's
// rows: none, the node experiment's 1%, and 5%.
var decideSkews = []float64{0, 0.01, 0.05}

// decideUtils are the loads the experiment runs at.
var decideUtils = []float64{0.6, 0.8}

// The experiment's cluster and runs: a fifth of the node experiment's
// 1,000 slots on 25 workers of 8 (so that its slow workers are still a
// handful), measured for 20 minutes after ten and drained for half an
// hour, to keep its 960 runs cheap (paired seeds resolve the gains at this
// size); the job sizes shrink with the cluster so that the largest job
// still fits in it. A configuration that saturates the cluster leaves
// jobs unfinished at the end of the drain: they are out of its mean JCT
// (which flatters it) and the tables count them.
const (
	decideSlots, decideSlotsPerWorker, decideJobMax         = 200, 8, 400
	decideWarmup, decideDuration, decideDrain       float64 = 600, 1200, 3 * 3600
)

// hopperDecideExp runs, at each load, skew and seed, every arm of
// decideArms under SRPT (best effort, the baseline) and under Hopper at
// every virtual size, all with the same arrivals and copy durations
// (common random numbers).
func hopperDecideExp(ctx context.Context, o Options) ([]Params, func([]Result) Report, error) {
	return hopperDecideArms(ctx, o, decideArms)
}

// hopperDecideShareExp is hopperDecideExp with the share-capped arm as
// well (the experiment hopper-decide-share): the same runs, the same
// seeds and the same tables with that arm's rows and columns added.
func hopperDecideShareExp(ctx context.Context, o Options) ([]Params, func([]Result) Report, error) {
	return hopperDecideArms(ctx, o, decideShareArms)
}

// hopperDecideArms runs the deciding experiment over the given arms; the
// first two must be decideArms' (the defaults are indices into them).
func hopperDecideArms(ctx context.Context, o Options, decideArms []decideArm) ([]Params, func([]Result) Report, error) {
	seeds := 2 * o.seeds()
	base := Defaults(WorkloadCluster)
	base.Slots, base.SlotsPerWorker, base.JobSizeMax = decideSlots, decideSlotsPerWorker, decideJobMax
	base.Warmup, base.Duration, base.Drain = decideWarmup, decideDuration, decideDrain
	utils, skews := decideUtils, decideSkews
	if o.Quick {
		seeds, utils, skews = 2, []float64{0.6}, []float64{0, 0.05}
		base.Slots, base.Duration, base.JobSizeMax = 96, 900, 200
	}
	NodeModel.Apply(&base)
	o.Model.Apply(&base)
	base, err := CalibrateWork(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	// v = -1: the SRPT baseline; 0..len(decideVs)-1: Hopper.
	type key struct{ u, k, a, v, seed int }
	index := map[key]int{}
	var ps []Params
	for ui, u := range utils {
		for ki, skew := range skews {
			for ai, a := range decideArms {
				for v := -1; v < len(decideVs); v++ {
					if v >= 0 && !a.runsAt(v) {
						continue
					}
					for seed := range seeds {
						p := base
						p.Utilization, p.Seed, p.TaskSkew = u, int64(seed+1), skew
						p.Sched.Policy, p.Sched.Speculation = sched.PolicySRPTxFCFS, a.spec
						if v >= 0 {
							p.Sched.Speculation = sched.SpecHopperGRASS
							p.Sched.VirtualFactor, p.Sched.VirtualFloor = decideVs[v].factor, decideVs[v].floor
							p.Sched.HopperClone = a.clone
						}
						a.apply(&p)
						index[key{ui, ki, ai, v, seed}] = len(ps)
						ps = append(ps, p)
					}
				}
			}
		}
	}
	analyze := func(rs []Result) Report {
		at := func(ui, ki, ai, v, seed int) Result { return rs[index[key{ui, ki, ai, v, seed}]] }
		// gain is 1 − JCT(ours)/JCT(base) per seed, in %.
		gain := func(ui, ki, ab, vb, ao, vo int) Summary {
			var g []float64
			for seed := range seeds {
				g = append(g, 100*(1-at(ui, ki, ao, vo, seed).MeanVisibleResponse/at(ui, ki, ab, vb, seed).MeanVisibleResponse))
			}
			return Summarize(g)
		}
		unfinished := func(ui, ki, ai, v int) Summary {
			var x []float64
			for seed := range seeds {
				r := at(ui, ki, ai, v, seed)
				x = append(x, 100*float64(r.Unfinished)/float64(max(r.Requests+r.Unfinished, 1)))
			}
			return Summarize(x)
		}
		jct := func(ui, ki, ai, v int) Summary {
			var x []float64
			for seed := range seeds {
				x = append(x, at(ui, ki, ai, v, seed).MeanVisibleResponse)
			}
			return Summarize(x)
		}
		rep := Report{Title: "The deciding Hopper experiment: Hopper against SRPT by skew, GRASS and V"}
		shareSetup, src := "", "batchd (hopper-decide)"
		if slices.ContainsFunc(decideArms, func(a decideArm) bool { return a.share }) {
			rep.Title += ", with GRASS share-capped"
			src = "batchd (hopper-decide-share)"
			shareSetup = fmt.Sprintf("; GRASS share-capped, at most max(%d, ⌈S/(N·R)⌉) live copies of a task in its job's last wave, S slots over N jobs in flight and R the job's remaining tasks (Config.LastWaveShare: GRASS's last-wave k = S_j/R, Appendix A, with Hopper's fair share S/N as S_j)", grassCopyCap)
		}
		rep.Setup = fmt.Sprintf("The node-level straggler model of the section above on a %d-slot cluster (%d per worker, jobs 1..%d tasks, β = %g, x_m = %gs; a pilot run measured %.1f slot-seconds per task), at %s load, with %s of tasks skewed (every copy of a skewed task takes the task's long draw: no copy escapes it). Each arm chooses copies the same way under SRPT (srpt×fcfs, best effort: the baseline) and inside Hopper's shares: GRASS as written; GRASS capped, at most %d live copies of a task in its job's last wave (Config.LastWaveCopies); GRASS per task, capped, with per-task estimates as well (Config.GrassPerTask); cloning, extra copies of running tasks without waiting for a straggler, fewest copies first (SRPT: speculation clone on every free slot; Hopper: Config.HopperClone, up to the job's share: the model of Hopper §4.1)%s. Hopper runs with V = ⌊2/β·T⌋ (Pseudocode 1, Config.VirtualFloor), ⌈2/β·T⌉ (the server's rounding) and %g·T, β fitted online; the arms after the first two at the last two only (⌊2/β·T⌋ lost to ⌈2/β·T⌉ in every cell for every arm when all ran at it). %d paired seeds: every configuration of a seed sees the same arrivals and copy durations; gains are 1 − JCT(Hopper)/JCT(SRPT) per seed, then the mean and its 95%% interval over seeds (Student's t).",
			base.Slots, base.SlotsPerWorker, base.JobSizeMax, base.Beta, base.TaskScale, base.WorkPerTask, pctList(utils), pctList(skews), grassCopyCap, shareSetup, float64(wideVirtual), seeds)
		gt := Table{Title: fmt.Sprintf("Hopper's gain over SRPT with the same arm (reduction in mean JCT, %%, mean ± 95%% CI over %d paired seeds), and the SRPT baseline's mean JCT (s)", seeds),
			Header: []string{"load", "task skew", "arm", "SRPT's JCT (s)", "SRPT's jobs unfinished"}}
		for _, v := range decideVs {
			gt.Header = append(gt.Header, "Hopper, V = "+v.name)
		}
		gt.Header = append(gt.Header, "Hopper's jobs unfinished (most of the three V)")
		dt := Table{Title: fmt.Sprintf("Every Hopper configuration against the previous server default (hopper+grass, %s, V = %s): reduction in mean JCT (%%, mean ± 95%% CI over %d paired seeds; positive is faster than the default)", decideArms[decideDefault[0]].name, decideVs[decideDefault[1]].name, seeds),
			Header: []string{"load", "task skew", "default's JCT (s)"}}
		for _, a := range decideArms {
			for _, v := range decideVs {
				dt.Header = append(dt.Header, a.name+", V = "+v.name)
			}
		}
		fig := Figure{ID: "decide-gain", Kind: FigureBars, Title: "Hopper's gain over SRPT with the same arm, V = ⌈2/β·T⌉, by load and task skew",
			XLabel: "load, task skew", YLabel: "reduction in mean JCT (%)"}
		for ai, a := range decideArms {
			se := Series{Name: a.name}
			for ui, u := range utils {
				for ki, skew := range skews {
					if ai == 0 {
						fig.Categories = append(fig.Categories, pctList([]float64{u})+", "+pctList([]float64{skew}))
					}
					g := gain(ui, ki, ai, -1, ai, 1)
					se.X, se.Y = append(se.X, float64(len(se.X))), append(se.Y, g.Mean)
					se.YLo, se.YHi = append(se.YLo, g.Mean-g.HalfWidth), append(se.YHi, g.Mean+g.HalfWidth)
				}
			}
			fig.Series = append(fig.Series, se)
		}
		rep.Figures = append(rep.Figures, fig)
		for ui, u := range utils {
			for ki, skew := range skews {
				load, sk := pctList([]float64{u}), pctList([]float64{skew})
				for ai, a := range decideArms {
					row := []string{load, sk, a.name, fmtCI(jct(ui, ki, ai, -1), ""), fmtCI(unfinished(ui, ki, ai, -1), "%")}
					for v := range decideVs {
						if !a.runsAt(v) {
							row = append(row, "not run")
							continue
						}
						g := gain(ui, ki, ai, -1, ai, v)
						row = append(row, fmtCI(g, "%"))
						rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide-%s-%s-%d-%d", load, sk, ai, v), Source: src,
							Metric: fmt.Sprintf("reduction in mean JCT of Hopper (V = %s) vs SRPT, both %s, task skew %s, at %s", decideVs[v].name, a.name, sk, load),
							Paper:  "(Hopper §7: Hopper beats its SRPT baseline)", Ours: g, Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
					}
					worst := 0.0
					for v := range decideVs {
						if a.runsAt(v) {
							worst = max(worst, unfinished(ui, ki, ai, v).Mean)
						}
					}
					gt.Rows = append(gt.Rows, append(row, fmt.Sprintf("%.2g%%", worst)))
				}
				row := []string{load, sk, fmtCI(jct(ui, ki, decideDefault[0], decideDefault[1]), "")}
				for ai, a := range decideArms {
					for v := range decideVs {
						if !a.runsAt(v) {
							row = append(row, "not run")
							continue
						}
						g := gain(ui, ki, decideDefault[0], decideDefault[1], ai, v)
						row = append(row, fmtCI(g, "%"))
						if ai != decideDefault[0] || v != decideDefault[1] {
							rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide-default-%s-%s-%d-%d", load, sk, ai, v), Source: src,
								Metric: fmt.Sprintf("reduction in mean JCT of Hopper, %s, V = %s vs the previous server default, task skew %s, at %s", decideArms[ai].name, decideVs[v].name, sk, load),
								Paper:  "(which default: positive is faster than hopper+grass as written, ⌈2/β·T⌉)", Ours: g, Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
						}
					}
				}
				dt.Rows = append(dt.Rows, row)
			}
		}
		// The server's default against its rivals at the same V = 8·T:
		// every GRASS arm, under Hopper and under SRPT.
		ct := Table{Title: fmt.Sprintf("Against the server's default (hopper+grass, %s, V = %s): reduction in mean JCT (%%, mean ± 95%% CI over %d paired seeds; positive is faster than the default)", decideArms[serverDefault[0]].name, decideVs[serverDefault[1]].name, seeds),
			Header: []string{"load", "task skew", "default's JCT (s)"}}
		var rivals [][2]int // (arm, v); v = -1: SRPT
		for _, v := range []int{serverDefault[1], -1} {
			for ai, a := range decideArms {
				if a.clone || [2]int{ai, v} == serverDefault {
					continue
				}
				rivals = append(rivals, [2]int{ai, v})
				if v < 0 {
					ct.Header = append(ct.Header, "SRPT, "+a.name)
				} else {
					ct.Header = append(ct.Header, "Hopper, "+a.name+", V = "+decideVs[v].name)
				}
			}
		}
		for ui, u := range utils {
			for ki, skew := range skews {
				load, sk := pctList([]float64{u}), pctList([]float64{skew})
				row := []string{load, sk, fmtCI(jct(ui, ki, serverDefault[0], serverDefault[1]), "")}
				for _, r := range rivals {
					g := gain(ui, ki, serverDefault[0], serverDefault[1], r[0], r[1])
					row = append(row, fmtCI(g, "%"))
					rep.Claims = append(rep.Claims, Claim{Key: fmt.Sprintf("decide-server-%s-%s-%d-%d", load, sk, r[0], r[1]), Source: src,
						Metric: fmt.Sprintf("reduction in mean JCT of %s vs the server's default, task skew %s, at %s", ct.Header[len(row)-1], sk, load),
						Paper:  "(which default: positive is faster than hopper+grass, GRASS capped, V = 8·T)", Ours: g, Unit: "%", Note: "per-seed gains, paired seeds", Detail: true})
				}
				ct.Rows = append(ct.Rows, row)
			}
		}
		rep.Tables = append(rep.Tables, gt, dt, ct)
		return rep
	}
	return ps, analyze, nil
}

// pctList formats fractions as "60%, 80%".
func pctList(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%g%%", 100*x)
	}
	return s
}
