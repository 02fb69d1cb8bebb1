package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
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
		Name:  "worker",
		Usage: "run tasks for a batchd server on this machine",
		UsageText: "batchd worker --server URL --token-file FILE [--remove-token-file] [--slots N] [--name NAME] [--state-dir DIR]\n" +
			"    [--isolation auto|uid|owner-uid|namespaces|none] [--slot-uids FIRST-LAST] [--user NAME] [--hide DIR]...",
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
			"SIGTERM ended first is handed back too, never reported as the task's failed result.\n\n" +
			"Tasks are isolated (--isolation, README: Security model): as root each running copy has a uid\n" +
			"of its own (--slot-uids); without root each copy runs in user, mount and PID namespaces that\n" +
			"hide the worker's state and the --hide directories, show only its own processes and leave\n" +
			"the rest read-only. A task's environment is built from scratch (PATH, LANG, LC_*, TZ, TERM,\n" +
			"HOME = its scratch directory, its own variables). A worker without isolation runs the tasks\n" +
			"of one user (--user). The token comes from --token-fd or a 0600 --token-file, never from\n" +
			"a place a task can read.",
		Flags: append([]cli.Flag{
			// Required, but checked in the action: --kill-leftovers needs none.
			&cli.StringFlag{Name: "server", Usage: "server base URL, e.g. http://host:8080 (required)", EnvVars: []string{"BATCH_SERVER"}},
			&cli.IntFlag{Name: "token-fd", Usage: "read the worker token from file descriptor `N` (e.g. --token-fd 3 3<FILE)"},
			&cli.StringFlag{Name: "token-file", Usage: "read the worker token from `FILE` (0600; batchd user add --worker NAME mints one)"},
			&cli.BoolFlag{Name: "remove-token-file", Usage: "remove --token-file once read (pilots)"},
			&cli.DurationFlag{Name: "token-wait", Usage: "wait up to this long for an empty --token-file to be filled (pilots: they may start before their pool has written it)"},
			&cli.StringFlag{Name: "token", Usage: "deprecated: worker `TOKEN` on the command line (or $BATCH_WORKER_TOKEN), readable by every process of the machine"},
			&cli.StringFlag{Name: "user", Usage: "the one batchd `USER` whose tasks this worker runs (required in effect with --isolation none)"},
			&cli.StringSliceFlag{Name: "hide", Usage: "a `DIR` tasks must not see (namespaces), repeatable"},
			&cli.IntFlag{Name: "slots", Usage: "copies to run at once", Value: runtime.NumCPU()},
			&cli.IntFlag{Name: "task-nice", Usage: "run tasks this much nicer than the worker (0-19), e.g. on a host that also serves people", EnvVars: []string{"BATCHD_TASK_NICE"}},
			&cli.StringFlag{Name: "name", Usage: "worker name (default: hostname-RANDOM6HEX)"},
			&cli.StringFlag{Name: "state-dir", Usage: "per-copy scratch directories (default: $TMPDIR/batchd-worker-NAME)"},
			&cli.DurationFlag{Name: "drain", Usage: "on shutdown, how long to keep delivering held results", Value: 10 * time.Second},
			&cli.BoolFlag{Name: "no-suspend", Usage: "tell the server this worker cannot suspend copies (preemption kills)"},
			&cli.StringFlag{Name: "gpus", Usage: "GPUs offered to tasks that ask for some: N (devices 0 to N-1), a list (0,2 or UUIDs), or slurm: the Slurm job's (CUDA_VISIBLE_DEVICES, else SLURM_JOB_GPUS); default none"},
			&cli.StringFlag{Name: "memory", Usage: "memory offered to tasks that ask for some, e.g. 8G, or slurm: the Slurm job's allocation (default: the machine's, or its cgroup's limit where smaller; 0: none)"},
			&cli.DurationFlag{Name: "idle-exit", Usage: "leave (exit 0) after holding no copy for this long, e.g. 30s (default: never)"},
			&cli.StringFlag{Name: "ends-at", Usage: "when the worker's allocation ends: slurm (its Slurm job's time limit), Unix seconds or an RFC 3339 time; it takes no copy that would run past it (default: never ends)"},
			&cli.DurationFlag{Name: "end-margin", Usage: "stop taking copies this long before --ends-at (default 30s, at most a quarter of the time left)"},
			&cli.StringFlag{Name: "pool", Usage: "the pool this worker belongs to: sets routed to it (batchctl disclose --pool) run only on its workers (default: none; such a worker runs unrouted sets only)"},
			&cli.StringFlag{Name: "partition", Usage: "the batch-system partition this worker runs in, or slurm: its Slurm job's (SLURM_JOB_PARTITION); sets routed to a partition run only on its workers"},
			&cli.BoolFlag{Name: "hand-back", Usage: "on SIGTERM, hand running copies back at once, also those the signal reached first (pilots)"},
			// Benchmarks of the control plane only (bench/scaling_test.go):
			// copies end at once without running anything.
			// A pilot's script, once its worker ended however it ended:
			// kill what the worker's copies left (see worker.KillLeftovers).
			&cli.BoolFlag{Name: "kill-leftovers", Hidden: true, Usage: "kill what the copies of the worker with this --name (or --state-dir) left running, and exit"},
			&cli.BoolFlag{Name: "bench-no-exec", Hidden: true, Usage: "benchmarks only: do not run copies, end each at once with exit 0"},
		}, isolationFlags("BATCHD_")...),
		Action: func(c *cli.Context) error {
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
			if c.Bool("kill-leftovers") {
				return killLeftovers(c, log)
			}
			if c.String("server") == "" {
				return errors.New(`required flag "server" not set: give --server URL (or BATCH_SERVER)`)
			}
			token, err := workerToken(c, log)
			if err != nil {
				return err
			}
			var mem int64
			if c.String("memory") == "slurm" {
				// The job's allocation, where the machine or the
				// worker's cgroup does not give less; without one,
				// theirs (the worker's default).
				if mem, _ = slurmMemoryMB(os.Getenv); mem > 0 {
					if a := worker.AllocatedMemoryMB(); a > 0 {
						mem = min(mem, a)
					}
				}
			} else {
				if mem, err = cliarg.ParseMiB(c.String("memory")); err != nil {
					return fmt.Errorf("--memory: %w", err)
				}
				if c.IsSet("memory") && mem == 0 {
					mem = -1 // offer none
				}
			}
			gpus, err := workerGPUs(c.String("gpus"), os.Getenv)
			if err != nil {
				return err
			}
			cfg := worker.Config{
				MemoryMB:      mem,
				GPUs:          gpus,
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
				ClientOptions: []connect.ClientOption{connect.WithInterceptors(client.BearerInterceptor(token))},
				BoundUser:     c.String("user"),
				Hide:          c.StringSlice("hide"),
			}
			if cfg.EndsAt, err = workerEndsAt(c.Context, c.String("ends-at")); err != nil {
				return err
			}
			cfg.EndMargin = c.Duration("end-margin")
			cfg.Pool, cfg.Partition = c.String("pool"), workerPartition(c.String("partition"), os.Getenv)
			if err := isolationConfig(c, &cfg); err != nil {
				return err
			}
			return worker.Run(c.Context, cfg)
		},
	}
}

// killLeftovers is `batchd worker --kill-leftovers`: it kills what the
// copies of the worker named by --state-dir or --name left running.
func killLeftovers(c *cli.Context, log *slog.Logger) error {
	dir := c.String("state-dir")
	if dir == "" {
		if c.String("name") == "" {
			return errors.New("--kill-leftovers needs --state-dir or --name")
		}
		dir = worker.DefaultStateDir(c.String("name"))
	}
	n, err := worker.KillLeftovers(dir)
	if n > 0 {
		log.Warn("killed processes the worker's copies left", "count", n, "state_dir", dir)
	}
	return err
}
