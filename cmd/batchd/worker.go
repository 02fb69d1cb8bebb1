package main

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/cmd/internal/cliarg"
	"batchd/worker"
)

// workerCommand runs a worker agent against a batchd server.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:      "worker",
		Usage:     "run tasks for a batchd server on this machine",
		UsageText: "batchd worker --server URL --token TOKEN [--slots N] [--name NAME] [--state-dir DIR]",
		Description: "The worker registers with the server, runs the copies it is given as child processes\n" +
			"(each in its own process group, killed with the worker), reports their progress\n" +
			"(last line of $BATCH_PROGRESS_FILE, a number in [0,1]) and results, and keeps its\n" +
			"lease with heartbeats. It reconnects by itself when the server goes away, and holds\n" +
			"finished results in memory until the server has taken them.\n\n" +
			"A worker that cannot renew its lease (the server's --lease) stops its copies (SIGSTOP;\n" +
			"killed with --no-suspend) when it runs out, and lets them run on once the server answers\n" +
			"again, unless the server has run them elsewhere meanwhile (docs/design.md: Leases).\n\n" +
			"Copies see BATCH_TASK_SET, BATCH_TASK_INDEX, BATCH_TASK_ATTEMPT (1, 2, ... as the task is\n" +
			"retried in place), BATCH_COPY_ID and BATCH_PROGRESS_FILE, and the tasks of an array\n" +
			"(batchctl disclose --array) their value as BATCH_ARRAY_VALUE.\n\n" +
			"On SIGTERM or SIGINT the worker stops taking work, kills its running copies and\n" +
			"reports them killed (the server runs their tasks again elsewhere), delivers every\n" +
			"held result (waiting at most --drain), and exits; exit status 1 if some result could\n" +
			"not be delivered in time.\n\n" +
			"Pilots (batchd pool slurm starts them) run with --idle-exit, to leave once the work is\n" +
			"done, and --hand-back, for a batch system that signals the whole job: a copy that its\n" +
			"SIGTERM ended first is handed back too, never reported as the task's failed result.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "server base URL, e.g. http://host:8080", EnvVars: []string{"BATCH_SERVER"}, Required: true},
			&cli.StringFlag{Name: "token", Usage: "worker `TOKEN` (batchd user add --worker NAME mints one)", EnvVars: []string{"BATCH_WORKER_TOKEN"}},
			&cli.IntFlag{Name: "slots", Usage: "copies to run at once", Value: runtime.NumCPU()},
			&cli.IntFlag{Name: "task-nice", Usage: "run tasks this much nicer than the worker (0-19), e.g. on a host that also serves people", EnvVars: []string{"BATCHD_TASK_NICE"}},
			&cli.StringFlag{Name: "name", Usage: "worker name (default: hostname-RANDOM6HEX)"},
			&cli.StringFlag{Name: "state-dir", Usage: "per-copy scratch directories (default: $TMPDIR/batchd-worker-NAME)"},
			&cli.DurationFlag{Name: "drain", Usage: "on shutdown, how long to keep delivering held results", Value: 10 * time.Second},
			&cli.BoolFlag{Name: "no-suspend", Usage: "tell the server this worker cannot suspend copies (preemption kills)"},
			&cli.StringFlag{Name: "memory", Usage: "memory offered to tasks that ask for some, e.g. 8G (default: the machine's; 0: none)"},
			&cli.DurationFlag{Name: "idle-exit", Usage: "leave (exit 0) after holding no copy for this long, e.g. 30s (default: never)"},
			&cli.BoolFlag{Name: "hand-back", Usage: "on SIGTERM, hand running copies back at once, also those the signal reached first (pilots)"},
			// Benchmarks of the control plane only (bench/scaling_test.go):
			// copies end at once without running anything.
			&cli.BoolFlag{Name: "bench-no-exec", Hidden: true, Usage: "benchmarks only: do not run copies, end each at once with exit 0"},
		},
		Action: func(c *cli.Context) error {
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
			mem, err := cliarg.ParseMiB(c.String("memory"))
			if err != nil {
				return fmt.Errorf("--memory: %w", err)
			}
			if c.IsSet("memory") && mem == 0 {
				mem = -1 // offer none
			}
			return worker.Run(c.Context, worker.Config{
				MemoryMB:      mem,
				Server:        c.String("server"),
				Name:          c.String("name"),
				Slots:         c.Int("slots"),
				StateDir:      c.String("state-dir"),
				Logger:        log,
				Version:       version,
				NoSuspend:     c.Bool("no-suspend"),
				Nice:          c.Int("task-nice"),
				BenchNoExec:   c.Bool("bench-no-exec"),
				DrainTimeout:  c.Duration("drain"),
				IdleExit:      c.Duration("idle-exit"),
				HandBack:      c.Bool("hand-back"),
				ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(c.String("token")))},
			})
		},
	}
}
