package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/sched"
	"batchd/sched/sim"
	"batchd/store"
)

// simReplayCommand is `batchd sim replay`: what a server's store recorded,
// run again under other policies and speculation modes.
func simReplayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay what a server recorded under other policies and speculation modes (what-if on real history)",
		ArgsUsage: " ",
		Description: "Reads the task sets a server's store recorded (through the store, never the database\n" +
			"directly): when each task was disclosed, requested and canceled, its estimate, the run\n" +
			"times of its copies, the workers and their slots, and the scheduler configuration the\n" +
			"server ran with. It runs that history again in virtual time with the real scheduler under\n" +
			"the recorded configuration and under each --policy × --speculation given, and prints the\n" +
			"metrics `batchd sim run` prints, beside what was recorded. A request is the tasks of one set\n" +
			"requested at one instant. A copy the store has no full run time for (killed, lost, or more\n" +
			"copies than ran) draws one of the recorded run times (above what a killed copy had run),\n" +
			"seeded: --seeds gives intervals over those draws.\n\n" +
			"Example: batchd sim replay --data ./batchd-data --since 168h -p fcfs×fcfs,srpt×fcfs -s hopper+grass,none",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Required: true, Usage: "data `DIR` of the server (holding batchd.db); the server may be running"},
			&cli.DurationFlag{Name: "since", Usage: "only task sets created within this long before --until (e.g. 168h; 0 = all)"},
			&cli.TimestampFlag{Name: "until", Layout: time.RFC3339, Usage: "only task sets created before this time (RFC 3339; default now)"},
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "queue policies to replay under (repeat or comma-separate; default: the recorded one)"},
			&cli.StringSliceFlag{Name: "speculation", Aliases: []string{"s"}, Usage: "speculation modes: hopper+grass, grass, best-effort-late, budgeted-N, none (default: the recorded one)"},
			&cli.StringFlag{Name: "preemption", Usage: "suspend, kill or off (default: the recorded one)"},
			&cli.Float64Flag{Name: "progress-every", Usage: "running copies report exact progress every this many seconds (0: none, as tasks that write no progress file)"},
			&cli.IntFlag{Name: "seeds", Value: 5, Usage: "seeds for the draws of copies without a recorded run time (95% CI over them)"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv or markdown"},
		},
		Action: runSimReplay,
	}
}

func runSimReplay(c *cli.Context) error {
	path := filepath.Join(c.String("data"), "batchd.db")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no store at %s (is --data a batchd data directory?): %w", path, err)
	}
	db := store.NewDB(path)
	if err := db.Open(); err != nil {
		return err
	}
	defer db.Close()
	until := time.Time{}
	if t := c.Timestamp("until"); t != nil {
		until = *t
	}
	var since time.Time
	if d := c.Duration("since"); d > 0 {
		ref := until
		if ref.IsZero() {
			ref = time.Now()
		}
		since = ref.Add(-d)
	}
	tr, err := db.ExportTrace(c.Context, since, until)
	if err != nil {
		return err
	}
	if tr.Tasks() == 0 {
		return fmt.Errorf("the store holds no task sets in that window: nothing to replay")
	}
	tr.ProgressEvery = c.Float64("progress-every")
	seeds := c.Int("seeds")
	if seeds < 1 {
		return fmt.Errorf("--seeds must be at least 1")
	}
	cfgs, labels, err := replayConfigs(c, tr.Config)
	if err != nil {
		return err
	}
	slots := int32(0)
	for _, w := range tr.Workers {
		slots = max(slots, w.Slots) // per worker; summed below
	}
	title := fmt.Sprintf("%d task sets, %d tasks, %d workers (%d slots at most on one); recorded configuration: %s",
		len(tr.Sets), tr.Tasks(), len(tr.Workers), slots, orUnknown(tr.ConfigText))
	t := sim.Table{Title: title, Header: []string{"configuration", "requests", "visible response (s)", "visible slowdown", "throughput (tasks/h)", "load", "scaled billed", "waste (slot-s)", "spec. copies (won)", "β", "unfinished"}}
	rec := sim.Recorded(tr)
	t.Rows = append(t.Rows, []string{"recorded (live)", fmt.Sprint(rec.Requests), fmtNum(rec.MeanVisibleResponse), fmtNum(rec.MeanVisibleSlowdown), "", "", "", "", "", "", fmt.Sprint(rec.Unfinished)})
	start := time.Now()
	for i, cf := range cfgs {
		var v, sl, th, ld, sb, ws, beta []float64
		var spec, won int64
		reqs, unf := 0, 0
		for k := range seeds {
			r, err := sim.Replay(c.Context, tr, cf, sim.ReplayOptions{Seed: int64(k + 1)})
			if err != nil {
				return err
			}
			v, sl, th, ld, sb, ws, beta = append(v, r.MeanVisibleResponse), append(sl, r.MeanVisibleSlowdown), append(th, r.ThroughputPerHour),
				append(ld, r.Load), append(sb, r.ScaledBilled), append(ws, r.WasteSlotSeconds), append(beta, r.Beta)
			spec, won = spec+r.SpeculativeStarted, won+r.SpeculativeWon
			reqs, unf = reqs+r.Requests, unf+r.Unfinished
		}
		n := int64(seeds)
		t.Rows = append(t.Rows, []string{labels[i], fmt.Sprint(reqs / seeds), ci95(v), ci95(sl), ci95(th), ci95(ld), ci95(sb), ci95(ws),
			fmt.Sprintf("%d (%d)", spec/n, won/n), ci95(beta), fmt.Sprint(unf / seeds)})
	}
	if err := writeTable(c.App.Writer, t, c.String("format")); err != nil {
		return err
	}
	if c.String("format") == "table" {
		fmt.Fprintf(c.App.Writer, "%d replays in %.2fs (%d seeds each)\n", len(cfgs)*seeds, time.Since(start).Seconds(), seeds)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "not recorded (a store from before migration 0014): defaults assumed"
	}
	return s
}

// replayConfigs is the recorded configuration, then every --policy ×
// --speculation given (each defaulting to the recorded one), without
// repeating the recorded one.
func replayConfigs(c *cli.Context, rec sched.Config) ([]sched.Config, []string, error) {
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
	base := rec
	base.Seed, base.FirstCopyID = 0, 0
	if c.IsSet("preemption") {
		pre, err := sched.ParsePreemption(c.String("preemption"))
		if err != nil {
			return nil, nil, err
		}
		base.Preemption = pre
	}
	norm := func(cf sched.Config) sched.Config {
		if cf.Policy == "" {
			cf.Policy = sched.PolicySRPTxFCFS
		}
		if cf.Speculation == "" {
			cf.Speculation = sched.SpecHopperGRASS
		}
		if cf.Preemption == "" {
			cf.Preemption = sched.PreemptSuspend
		}
		return cf
	}
	base = norm(base)
	cfgs := []sched.Config{base}
	labels := []string{"recorded: " + base.String()}
	pols := []sched.Policy{base.Policy}
	if ps := split(c.StringSlice("policy")); len(ps) > 0 {
		pols = nil
		for _, s := range ps {
			p, err := sched.ParsePolicy(s)
			if err != nil {
				return nil, nil, err
			}
			pols = append(pols, p)
		}
	}
	type spec struct {
		s sched.Speculation
		b int
	}
	specs := []spec{{base.Speculation, base.Budget}}
	if ss := split(c.StringSlice("speculation")); len(ss) > 0 {
		specs = nil
		for _, s := range ss {
			sp, b, err := sched.ParseSpeculation(s)
			if err != nil {
				return nil, nil, err
			}
			specs = append(specs, spec{sp, b})
		}
	}
	for _, p := range pols {
		for _, sp := range specs {
			cf := base
			cf.Policy, cf.Speculation, cf.Budget = p, sp.s, sp.b
			if cf == base {
				continue
			}
			cfgs = append(cfgs, cf)
			labels = append(labels, cf.String())
		}
	}
	return cfgs, labels, nil
}
