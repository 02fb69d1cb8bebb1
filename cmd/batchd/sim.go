package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/urfave/cli/v2"

	"batchd/sched"
	"batchd/sched/sim"
)

// simCommand is `batchd sim`: the simulator that runs the real scheduler
// against the papers' workloads.
func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate the scheduler against the papers' workloads (Petrou, Hopper, GRASS, mixed)",
		Description: "run:        one workload under one or more policies and speculation modes, over seeds\n" +
			"experiment: one of the papers' experiments (petrou-sweep, petrou-fixed, cluster, hopper-fig3, cluster-node, mixed)\n" +
			"report:     every experiment; writes docs/results.md, figures (SVG, PNG) and CSV",
		Subcommands: []*cli.Command{simRunCommand(), simExperimentCommand(), simReportCommand(), simReplayCommand()},
	}
}

func simRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "simulate one workload under the given policies and speculation modes",
		ArgsUsage: " ",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "workload", Aliases: []string{"w"}, Value: "petrou", Usage: "petrou, cluster or mixed"},
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "queue policies (repeat or comma-separate); default: every policy"},
			&cli.StringSliceFlag{Name: "speculation", Aliases: []string{"s"}, Usage: "hopper+grass, grass (GRASS without Hopper), best-effort-late, clone (copies without waiting for a straggler), budgeted-N, none (default: none for petrou, hopper+grass otherwise)"},
			&cli.StringFlag{Name: "preemption", Value: "suspend", Usage: "suspend, kill or off"},
			&cli.BoolFlag{Name: "preempt-requested", Value: true, Usage: "preemptive SRPT in the requested class (the default): shorter requested work suspends the requested copy with the most work left; --preempt-requested=false runs non-preemptive SRPT over jobs"},
			&cli.StringFlag{Name: "set-size-per", Value: "set", Usage: "draw tasks (jobs) per set for every new set (set, the default) or once per user (user)"},
			&cli.StringSliceFlag{Name: "grass", Usage: "GRASS rule inside a job (hopper+grass, grass): switch (RAS then GS; default), gs, ras (repeat or comma-separate)"},
			&cli.Float64Flag{Name: "epsilon", Usage: "Hopper's fairness ε (0 = default 0.1, negative = none)"},
			&cli.DurationFlag{Name: "straggler-after", Usage: "run time before a copy may be speculated; hopper+grass also keeps a job's unused share free that long after its last start (Hopper §3, Fig. 2; default 0)"},
			&cli.Float64Flag{Name: "virtual-factor", Usage: "hopper+grass: virtual size V = this × remaining tasks (0 = Hopper's max(2/β, 1); at least 1)"},
			&cli.BoolFlag{Name: "grass-per-task", Usage: "GRASS: estimate a further copy of a task from the task's own copies (sched.Config.GrassPerTask)"},
			&cli.IntFlag{Name: "last-wave-copies", Usage: "GRASS: at most this many live copies of a task in its job's last wave (0 = no bound)"},
			&cli.BoolFlag{Name: "last-wave-share", Usage: "GRASS: at most ⌈slots / (jobs in flight × the job's remaining tasks)⌉ live copies of a task in its job's last wave, never below --last-wave-copies (sched.Config.LastWaveShare)"},
			&cli.IntFlag{Name: "seeds", Value: 5, Usage: "seeds per configuration (95% CI over them)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "first seed"},
			&cli.IntFlag{Name: "slots", Usage: "total slots"},
			&cli.IntFlag{Name: "users", Usage: "closed-loop users"},
			&cli.Float64Flag{Name: "change-max", Value: -1, Usage: "upper bound of the task set change probability"},
			&cli.IntFlag{Name: "set-max", Usage: "upper bound of tasks (petrou) or jobs (mixed) per set"},
			&cli.Float64Flag{Name: "service", Usage: "petrou: mean service time (s)"},
			&cli.Float64Flag{Name: "think", Usage: "mean think time (s)"},
			&cli.Float64Flag{Name: "utilization", Usage: "cluster: target utilisation (0..1)"},
			&cli.Float64Flag{Name: "beta", Usage: "Pareto shape of copy durations"},
			&cli.Float64Flag{Name: "task-scale", Usage: "Pareto scale (shortest copy) in seconds"},
			&cli.IntFlag{Name: "job-max", Usage: "largest job (tasks)"},
			&cli.DurationFlag{Name: "duration", Usage: "measured virtual time (e.g. 336h)"},
			&cli.DurationFlag{Name: "warmup", Usage: "virtual warm-up time dropped from the measurements"},
			&cli.DurationFlag{Name: "worker-mtbf", Usage: "mean virtual time between failures of each worker (0 = none); its live copies are lost"},
			&cli.DurationFlag{Name: "worker-repair", Value: time.Minute, Usage: "mean virtual time a failed worker stays down"},
			&cli.BoolFlag{Name: "batch-cancels", Usage: "let batch users cancel the rest of a set (Petrou's batch users cannot: every task they submitted counts as requested)"},
			&cli.Float64Flag{Name: "progress-noise", Usage: "σ of the lognormal noise on progress reports (0 = exact progress, an oracle for t_rem)"},
			&cli.BoolFlag{Name: "node-model", Usage: "cluster, mixed: the node-level straggler model and LATE's limits of the cluster-node experiment (each flag below overrides one part)"},
			&cli.BoolFlag{Name: "calibrate", Usage: "cluster: set the arrival rate from a pilot run so the LATE baseline's load is near --utilization"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv or markdown"},
		}, modelFlags()...),
		Action: func(c *cli.Context) error {
			w := sim.Workload(c.String("workload"))
			base := sim.Defaults(w)
			if err := setSimParams(c, &base); err != nil {
				return err
			}
			if c.Bool("calibrate") {
				var err error
				if base, err = sim.CalibrateWork(c.Context, base); err != nil {
					return err
				}
			}
			cfgs, err := simConfigs(c, w)
			if err != nil {
				return err
			}
			seeds := c.Int("seeds")
			if seeds < 1 {
				return fmt.Errorf("--seeds must be at least 1")
			}
			var ps []sim.Params
			for _, cf := range cfgs {
				for i := range seeds {
					p := base
					p.Sched = cf
					p.Seed = c.Int64("seed") + int64(i)
					ps = append(ps, p)
				}
			}
			start := time.Now()
			rs, err := sim.RunAll(c.Context, ps, 0, nil)
			if err != nil {
				return err
			}
			wall := time.Since(start).Seconds()
			t := sim.Table{Title: base.String(), Header: []string{"policy / speculation / preemption", "visible response (s)", "visible slowdown", "throughput (tasks/h)", "load", "all slots busy", "scaled billed", "waste (slot-h)", "spec. copies (won)", "lost copies", "events/s"}}
			for ci, cf := range cfgs {
				var v, sl, th, ld, fu, sb, ws []float64
				var spec, won, ev, lost int64
				var secs float64
				for i := range seeds {
					r := rs[ci*seeds+i]
					v, sl, th, ld, sb, ws = append(v, r.MeanVisibleResponse), append(sl, r.MeanVisibleSlowdown), append(th, r.ThroughputPerHour), append(ld, r.Load), append(sb, r.ScaledBilled), append(ws, r.WasteSlotSeconds/3600)
					fu = append(fu, r.FullShare)
					spec, won, ev, secs = spec+r.SpeculativeStarted, won+r.SpeculativeWon, ev+r.Events+r.Applied, secs+r.WallSeconds
					lost += r.LostCopies
				}
				t.Rows = append(t.Rows, []string{cf.String(), ci95(v), ci95(sl), ci95(th), ci95(ld), ci95(fu), ci95(sb), ci95(ws),
					fmt.Sprintf("%d (%d)", spec/int64(seeds), won/int64(seeds)), fmt.Sprint(lost / int64(seeds)), fmt.Sprintf("%.3g", float64(ev)/secs)})
			}
			if err := writeTable(c.App.Writer, t, c.String("format")); err != nil {
				return err
			}
			if c.String("format") == "table" {
				fmt.Fprintf(c.App.Writer, "%d runs in %.2fs of wall time (%d seeds each)\n", len(rs), wall, seeds)
			}
			return nil
		},
	}
}

// setSimParams copies the set flags into p.
func setSimParams(c *cli.Context, p *sim.Params) error {
	if c.IsSet("slots") {
		p.Slots = c.Int("slots")
	}
	if c.IsSet("users") {
		p.Users = c.Int("users")
	}
	if v := c.Float64("change-max"); v >= 0 {
		p.ChangeProbMax = v
	}
	for name, dst := range map[string]*float64{"service": &p.ServiceMean, "think": &p.ThinkMean, "utilization": &p.Utilization, "beta": &p.Beta, "task-scale": &p.TaskScale} {
		if c.IsSet(name) {
			*dst = c.Float64(name)
		}
	}
	switch c.String("set-size-per") {
	case "user":
	case "set", "":
		p.SetSizePerSet = true
	default:
		return fmt.Errorf("--set-size-per %q: want user or set", c.String("set-size-per"))
	}
	p.ProgressNoise = c.Float64("progress-noise")
	m := modelFrom(c)
	if c.Bool("node-model") {
		m = mergeModel(sim.NodeModel, m)
	}
	m.Apply(p)
	p.BatchCancels = c.Bool("batch-cancels")
	p.WorkerMTBF, p.WorkerRepair = c.Duration("worker-mtbf").Seconds(), c.Duration("worker-repair").Seconds()
	if c.IsSet("set-max") {
		p.SetSizeMax = c.Int("set-max")
	}
	if c.IsSet("job-max") {
		p.JobSizeMax = c.Int("job-max")
	}
	if c.IsSet("duration") {
		p.Duration = c.Duration("duration").Seconds()
	}
	if c.IsSet("warmup") {
		p.Warmup = c.Duration("warmup").Seconds()
		if p.Warmup == 0 {
			p.Warmup = -1 // withDefaults: none
		}
	}
	return nil
}

// simConfigs is the cross product of --policy and --speculation.
func simConfigs(c *cli.Context, w sim.Workload) ([]sched.Config, error) {
	split := func(xs []string) []string {
		var out []string
		for _, x := range xs {
			for _, y := range strings.Split(x, ",") {
				if y = strings.TrimSpace(y); y != "" {
					out = append(out, y)
				}
			}
		}
		return out
	}
	var pols []sched.Policy
	for _, s := range split(c.StringSlice("policy")) {
		p, err := sched.ParsePolicy(s)
		if err != nil {
			return nil, err
		}
		pols = append(pols, p)
	}
	if len(pols) == 0 {
		pols = sched.Policies
	}
	specs := split(c.StringSlice("speculation"))
	if len(specs) == 0 {
		specs = []string{"hopper+grass"}
		if w == sim.WorkloadPetrou {
			specs = []string{"none"}
		}
	}
	pre, err := sched.ParsePreemption(c.String("preemption"))
	if err != nil {
		return nil, err
	}
	var grass []sched.GrassMode
	for _, g := range split(c.StringSlice("grass")) {
		m, err := sched.ParseGrassMode(g)
		if err != nil {
			return nil, err
		}
		grass = append(grass, m)
	}
	if len(grass) == 0 {
		grass = []sched.GrassMode{sched.GrassSwitch}
	}
	var out []sched.Config
	for _, p := range pols {
		for _, s := range specs {
			sp, b, err := sched.ParseSpeculation(s)
			if err != nil {
				return nil, err
			}
			gs := grass
			if sp != sched.SpecHopperGRASS && sp != sched.SpecGRASS {
				gs = []sched.GrassMode{sched.GrassSwitch} // GRASS's rule matters only where GRASS runs
			}
			for _, g := range gs {
				out = append(out, sched.Config{Policy: p, Speculation: sp, Budget: b, Preemption: pre, Epsilon: c.Float64("epsilon"), VirtualFactor: c.Float64("virtual-factor"), Grass: g, GrassPerTask: c.Bool("grass-per-task"), LastWaveCopies: c.Int("last-wave-copies"), LastWaveShare: c.Bool("last-wave-share"), PreemptRequested: c.Bool("preempt-requested"), StragglerAfter: c.Duration("straggler-after").Seconds()})
			}
		}
	}
	return out, nil
}

// ci95 formats the mean of xs and its 95% confidence half-width.
func ci95(xs []float64) string {
	s := sim.Summarize(xs)
	if s.N < 2 {
		return fmtNum(s.Mean)
	}
	return fmtNum(s.Mean) + " ± " + fmtNum(s.HalfWidth)
}

func fmtNum(x float64) string {
	switch ax := math.Abs(x); {
	case math.IsNaN(x):
		return "n/a"
	case ax >= 1000:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case ax >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// writeTable renders t as an ASCII table, CSV or Markdown.
func writeTable(w io.Writer, t sim.Table, format string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(t.Header)
		_ = cw.WriteAll(t.Rows)
		return cw.Error()
	case "markdown", "md":
		if t.Title != "" {
			fmt.Fprintf(w, "**%s**\n\n", t.Title)
		}
		tb := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithHeaderAutoFormat(tw.Off))
		tb.Header(toAny(t.Header)...)
		for _, r := range t.Rows {
			if err := tb.Append(r); err != nil {
				return err
			}
		}
		if err := tb.Render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return nil
	case "table", "":
		if t.Title != "" {
			fmt.Fprintln(w, t.Title)
		}
		tb := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})))
		tb.Header(toAny(t.Header)...)
		for _, r := range t.Rows {
			if err := tb.Append(r); err != nil {
				return err
			}
		}
		return tb.Render()
	}
	return fmt.Errorf("unknown format %q (want table, csv or markdown)", format)
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// modelFlags are the node-level straggler model's and LATE's limits' flags
// (sim.StragglerModel), on `sim run` and `sim experiment`.
func modelFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "slow-nodes", Usage: "fraction of workers that are slow: every copy started on one takes --slowdown times its draw (0 = none)"},
		&cli.Float64Flag{Name: "slowdown", Usage: "a slow worker's factor on its copies' durations (default 4 with --slow-nodes)"},
		&cli.DurationFlag{Name: "slow-epoch", Usage: "redraw which workers are slow this often (0 = fixed for the run)"},
		&cli.Float64Flag{Name: "task-skew", Usage: "fraction of tasks whose copies all take the same duration (data skew: a copy does not escape)"},
		&cli.DurationFlag{Name: "progress-every", Usage: "progress heartbeat of a running copy (0 = at work done x_m·2^k)"},
		&cli.Float64Flag{Name: "late-cap", Usage: "best-effort-late: live speculative copies at most this fraction of the slots (Hadoop, Spark: 0.1; 0 = no cap)"},
		&cli.Float64Flag{Name: "late-quantile", Usage: "best-effort-late: speculate only tasks at or below this quantile of their job's progress rates (LATE's SlowTaskThreshold: 0.25; 0 = any)"},
	}
}

// modelFrom reads modelFlags (and --progress-noise where the command has it).
func modelFrom(c *cli.Context) sim.StragglerModel {
	return sim.StragglerModel{NodeSlowFrac: c.Float64("slow-nodes"), NodeSlowdown: c.Float64("slowdown"), NodeEpoch: c.Duration("slow-epoch").Seconds(),
		TaskSkew: c.Float64("task-skew"), ProgressEvery: c.Duration("progress-every").Seconds(), ProgressNoise: c.Float64("progress-noise"),
		SpecCap: c.Float64("late-cap"), SlowTaskQuantile: c.Float64("late-quantile")}
}

// mergeModel is base with over's non-zero fields.
func mergeModel(base, over sim.StragglerModel) sim.StragglerModel {
	var p sim.Params
	p.Workload = sim.WorkloadCluster
	base.Apply(&p)
	over.Apply(&p)
	return sim.StragglerModel{NodeSlowFrac: p.NodeSlowFrac, NodeSlowdown: p.NodeSlowdown, NodeEpoch: p.NodeEpoch, TaskSkew: p.TaskSkew,
		ProgressEvery: p.ProgressEvery, ProgressNoise: p.ProgressNoise, SpecCap: p.Sched.SpecCap, SlowTaskQuantile: p.Sched.SlowTaskQuantile}
}

func experimentFlags() []cli.Flag {
	return append(modelFlags(),
		&cli.Float64Flag{Name: "progress-noise", Usage: "σ of the lognormal noise on progress reports, on every multi-task run (0 = the experiment's own)"},
		&cli.IntFlag{Name: "seeds", Value: 5, Usage: "seeds per parameter point (95% CI over them)"},
		&cli.IntFlag{Name: "sweep-seeds", Value: 5, Usage: "seeds per point of the Petrou sweep (each point and seed has its own random numbers)"},
		&cli.IntFlag{Name: "sweep-stride", Value: 13, Usage: "run every N-th of the 3,168 points of the Petrou sweep only (1 = all; 7 and 13 keep every value of every parameter)"},
		&cli.StringFlag{Name: "preempt-requested", Value: "default", Usage: "preemptive SRPT in the requested class: default (each configuration as the report runs it: preemptive unless labelled non-preemptive), on (every run) or off (every run: non-preemptive SRPT)"},
		&cli.StringFlag{Name: "set-size-per", Value: "default", Usage: "tasks (jobs) per set: default (each configuration as the report runs it: drawn for every set unless labelled per-user), set (every run) or user (every run: drawn once per user)"},
		&cli.BoolFlag{Name: "batch-cancels", Usage: "every run: batch users may cancel the rest of a set"},
		&cli.BoolFlag{Name: "fair-share", Usage: "every run: fair share between users in the requested class (the server's default; the experiments run without it, as the papers do)"},
		&cli.BoolFlag{Name: "fair-share-arm", Usage: "petrou-sweep: add the configuration srpt×fcfs (fair share) and its comparison with srpt×fcfs"},
		&cli.BoolFlag{Name: "quick", Usage: "small grids and short runs (a smoke test; not comparable to the papers)"},
		&cli.IntFlag{Name: "workers", Usage: "goroutines (default: all cores)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
	)
}

func experimentOptions(c *cli.Context) (sim.Options, error) {
	o := sim.Options{Seeds: c.Int("seeds"), SweepSeeds: c.Int("sweep-seeds"), SweepStride: c.Int("sweep-stride"), Quick: c.Bool("quick"), Workers: c.Int("workers"),
		BatchCancels: c.Bool("batch-cancels"), FairShare: c.Bool("fair-share"), FairShareArm: c.Bool("fair-share-arm"), Model: modelFrom(c)}
	switch v := c.String("preempt-requested"); v {
	case "default", "":
	case "on", "true":
		o.PreemptRequested = true
	case "off", "false":
		o.NoPreemptRequested = true
	default:
		return o, fmt.Errorf("--preempt-requested %q: want default, on or off", v)
	}
	switch v := c.String("set-size-per"); v {
	case "default", "":
	case "set":
		o.SetSizePerSet = true
	case "user":
		o.SetSizePerUser = true
	default:
		return o, fmt.Errorf("--set-size-per %q: want default, set or user", v)
	}
	if !c.Bool("quiet") {
		last := time.Time{}
		var mu sync.Mutex // sim report runs experiments side by side
		o.Progress = func(name string, done, total int) {
			mu.Lock()
			defer mu.Unlock()
			if now := time.Now(); now.Sub(last) > 2*time.Second || done == total {
				last = now
				fmt.Fprintf(c.App.ErrWriter, "%s: %d/%d runs\n", name, done, total)
			}
		}
	}
	return o, nil
}

func simExperimentCommand() *cli.Command {
	return &cli.Command{
		Name:      "experiment",
		Usage:     "run one experiment and print its claims and tables; --out also writes figures and CSV",
		ArgsUsage: strings.Join(sim.ExperimentNames, "|") + "|fair-share|stop-rules",
		Flags: append(experimentFlags(),
			&cli.StringFlag{Name: "out", Usage: "directory for figures (SVG, PNG) and CSV"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv or markdown"}, cpuProfileFlag),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("want one experiment: %s", strings.Join(sim.ExperimentNames, ", "))
			}
			o, err := experimentOptions(c)
			if err != nil {
				return err
			}
			stop, err := startCPUProfile(c)
			if err != nil {
				return err
			}
			defer stop()
			rep, err := sim.RunExperiment(c.Context, c.Args().First(), o)
			if err != nil {
				return err
			}
			if err := writeTable(c.App.Writer, claimTable(rep.Claims), c.String("format")); err != nil {
				return err
			}
			for _, t := range rep.Tables {
				if err := writeTable(c.App.Writer, t, c.String("format")); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.App.Writer, "%d runs, %d simulator events, %.1fs\n", rep.Runs, rep.Events, rep.WallSeconds)
			if dir := c.String("out"); dir != "" {
				if _, err := writeArtifacts(rep, dir); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// claimTable sets the papers' numbers beside ours.
func claimTable(cs []sim.Claim) sim.Table {
	t := sim.Table{Title: "The papers' numbers and ours", Header: []string{"source", "metric", "paper", "ours (95% CI)", "note"}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.Source, c.Metric, c.Paper, claimValue(c), c.Note})
	}
	return t
}

func claimValue(c sim.Claim) string {
	v := fmtNum(c.Ours.Mean)
	if c.Ours.HalfWidth > 0 {
		v += " ± " + fmtNum(c.Ours.HalfWidth)
	}
	switch c.Unit {
	case "%":
		v = strings.ReplaceAll(v, " ±", "% ±")
		if !strings.Contains(v, "±") {
			v += "%"
		}
	case "×":
		v = strings.Replace(v, " ±", "× ±", 1)
		if !strings.Contains(v, "±") {
			v += "×"
		}
	}
	return v
}

// writeArtifacts writes rep's figures (SVG, PNG, and the plotted data as
// CSV) and tables (CSV) under dir; it returns the figure files by ID.
func writeArtifacts(rep sim.Report, dir string) (map[string][]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]string{}
	for _, f := range rep.Figures {
		names, err := plotFigure(f, dir)
		if err != nil {
			return nil, err
		}
		files[f.ID] = names
		if err := writeFile(filepath.Join(dir, f.ID+".csv"), func(w io.Writer) error { return figureCSV(w, f) }); err != nil {
			return nil, err
		}
	}
	for i, t := range rep.Tables {
		name := filepath.Join(dir, fmt.Sprintf("%s-table%d.csv", rep.Name, i+1))
		if err := writeFile(name, func(w io.Writer) error { return writeTable(w, t, "csv") }); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func figureCSV(w io.Writer, f sim.Figure) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"series", "x", "category", "y", "y_lo", "y_hi"})
	for _, s := range f.Series {
		for j := range s.X {
			cat := ""
			if f.Kind == sim.FigureBars && j < len(f.Categories) {
				cat = f.Categories[j]
			}
			lo, hi := "", ""
			if s.YLo != nil {
				lo, hi = fmt.Sprint(s.YLo[j]), fmt.Sprint(s.YHi[j])
			}
			_ = cw.Write([]string{s.Name, fmt.Sprint(s.X[j]), cat, fmt.Sprint(s.Y[j]), lo, hi})
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
