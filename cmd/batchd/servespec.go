package main

import (
	"github.com/urfave/cli/v2"
)

// The server's speculation defaults, chosen by the simulator's
// hopper-decide experiment (docs/results.md, "The deciding Hopper
// experiment"): on a node-level straggler model with many small tasks,
// hopper+grass with a wide virtual size and GRASS capped in a job's last
// wave is the fastest or tied with it at 60% and 80% load, with 0, 1% or
// 5% of tasks skewed; the paper's V = ⌈2/β·T⌉ with GRASS as written loses
// 7% without skew and 16–26% with 1% skewed tasks, whose copies GRASS as
// written repeats without bound.
const (
	defaultVirtualFactor  = 8
	defaultLastWaveCopies = 4
	defaultLastWaveShare  = false
)

// specTuningFlags are serve's flags for Hopper's virtual size and GRASS's
// last-wave bound.
func specTuningFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "virtual-factor", Value: defaultVirtualFactor, EnvVars: []string{"BATCHD_VIRTUAL_FACTOR"},
			Usage: "hopper+grass: a job's virtual size V = factor × its remaining tasks (0: the paper's max(2/β, 1), β fitted online)"},
		&cli.IntFlag{Name: "last-wave-copies", Value: defaultLastWaveCopies, EnvVars: []string{"BATCHD_LAST_WAVE_COPIES"},
			Usage: "GRASS: at most this many live copies of one task once none of its job's tasks is queued (0: no bound, GRASS as written); with --last-wave-share, the bound's floor"},
		&cli.BoolFlag{Name: "last-wave-share", Value: defaultLastWaveShare, EnvVars: []string{"BATCHD_LAST_WAVE_SHARE"},
			Usage: "GRASS: bound a task's live copies in its job's last wave by the job's share of the slots instead, ⌈slots / (jobs in flight × the job's remaining tasks)⌉, never below --last-wave-copies"},
	}
}
