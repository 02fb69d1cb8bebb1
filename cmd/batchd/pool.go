package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"connectrpc.com/connect"
	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/pool"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/worker"
)

// poolCommand keeps elastic pools of pilot workers in a batch system.
func poolCommand() *cli.Command {
	return &cli.Command{
		Name:  "pool",
		Usage: "keep as many pilot workers in a cluster's batch system as the queues can use",
		Description: "A pool is a client of a batchd server (with a worker token) and of a batch system.\n" +
			"Each pilot is one `batchd worker` job; the pool submits pilots while requested work\n" +
			"waits (and, with --disclosed N, while up to N disclosed tasks wait), cancels pending\n" +
			"pilots no longer needed, and backs off when pilots cannot start. Pilots leave by\n" +
			"themselves when idle for --idle, and hand their running copies back to the server when\n" +
			"the batch system preempts or cancels them. Only Slurm is built: `batchd pool slurm`.",
		Subcommands:     []*cli.Command{poolSlurmCommand()},
		HideHelpCommand: true,
	}
}

func poolSlurmCommand() *cli.Command {
	return &cli.Command{
		Name:  "slurm",
		Usage: "an elastic pool of pilots in Slurm (sbatch, squeue, scancel)",
		UsageText: "batchd pool slurm --server URL --token-file FILE [--slots N] [--max-pilots N] [--idle 30s]\n" +
			"    [--partition P] [--disclosed N --disclosed-partition P --disclosed-qos Q] [--time T] [--account A]\n" +
			"    [--sbatch-arg ARG]...",
		Description: "Runs until SIGTERM or SIGINT (pilots stay and leave when idle; --cancel-on-exit ends them).\n\n" +
			"Each pilot is `sbatch --parsable --job-name batchd-POOL-CLASS --ntasks 1 --cpus-per-task SLOTS`\n" +
			"with a script that execs `BATCHD worker --server URL --slots SLOTS --idle-exit IDLE\n" +
			"--hand-back --token-file FILE --remove-token-file --token-wait WAIT --hide DIR --name slurm-$SLURM_JOB_ID`.\n" +
			"Each pilot gets a worker token of its own, never the pool's: once sbatch has answered, the pool\n" +
			"asks the server for a token that registers only that pilot's worker (slurm-JOBID) and lives\n" +
			"--token-ttl, and writes it into the pilot's 0600 file in --token-dir (a directory the nodes\n" +
			"share), which the worker waits for (--register-wait). The worker reads and removes the file before\n" +
			"it runs any task and hides the directory from its tasks: never in the job's environment or\n" +
			"script, which Slurm keeps where the job's user (and so a task on the pilot) can read them.\n" +
			"The server revokes a pilot's token once the pool reports the pilot ended.\n\n" +
			"Requested work goes to --partition (--qos); disclosed work, with --disclosed N, to\n" +
			"--disclosed-partition (--disclosed-qos), for example preemptible capacity: a preempted\n" +
			"pilot hands its copies back and they run again elsewhere, billed once.\n\n" +
			"The pool reports its pilots to the server: `batchctl cluster` and the page list them\n" +
			"(job id, state, reason, node, slots, age) and /metrics counts them (batchd_pilots{state}).\n" +
			"Slurm's commands find the cluster as usual (SLURM_CONF).\n\n" +
			"Try it on a one-node test cluster:\n\n" +
			"    e2e/slurm/start.sh /tmp/slurm && export SLURM_CONF=/tmp/slurm/slurm.conf\n" +
			"    batchd serve --slots 0 &\n" +
			"    (umask 077; batchd user add --worker pool > pool.token)\n" +
			"    batchd pool slurm --server http://127.0.0.1:8080 --token-file pool.token --slots 2 --max-pilots 2",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "server base URL the pool and the pilots use", EnvVars: []string{"BATCH_SERVER"}, Required: true},
			&cli.StringFlag{Name: "pilot-server", Usage: "server URL as the pilots' nodes reach it (default: --server)"},
			&cli.StringFlag{Name: "token-file", Usage: "read the worker token from `FILE` (0600)"},
			&cli.StringFlag{Name: "token", Usage: "worker `TOKEN` (prefer --token-file: a flag shows in ps, the environment in /proc)", EnvVars: []string{"BATCH_WORKER_TOKEN"}},
			&cli.StringFlag{Name: "token-dir", Usage: "`DIR` for the pilots' token files, seen by the nodes at the same path (default: .batchd-pilot-tokens in --chdir)"},
			&cli.DurationFlag{Name: "token-ttl", Usage: "how long a pilot's own token lives from its submission (default: --time plus an hour to wait in the queue, else 24h)"},
			&cli.StringFlag{Name: "name", Usage: "pool name on the server and in job names (batchd-NAME-requested)", Value: "slurm"},
			&cli.IntFlag{Name: "slots", Usage: "slots (CPUs) per pilot", Value: 1},
			&cli.IntFlag{Name: "max-pilots", Usage: "most pilots at once, pending and running", Value: 4},
			&cli.IntFlag{Name: "disclosed", Usage: "queued disclosed tasks to bring pilots up for (0: requested work only)"},
			&cli.DurationFlag{Name: "idle", Usage: "a pilot without work this long leaves", Value: 30 * time.Second},
			&cli.DurationFlag{Name: "interval", Usage: "time between rounds (list, report, submit, cancel)", Value: 2 * time.Second},
			&cli.DurationFlag{Name: "backoff", Usage: "first wait after a failed pilot (doubles up to --backoff-max)", Value: 5 * time.Second},
			&cli.DurationFlag{Name: "backoff-max", Usage: "longest wait after failed pilots", Value: 5 * time.Minute},
			&cli.DurationFlag{Name: "register-wait", Usage: "a started pilot whose worker has not registered after this long is cancelled as failed", Value: 2 * time.Minute},
			&cli.StringFlag{Name: "partition", Usage: "partition of requested pilots (default: Slurm's default)"},
			&cli.StringFlag{Name: "qos", Usage: "QOS of requested pilots"},
			&cli.StringFlag{Name: "disclosed-partition", Usage: "partition of disclosed pilots, e.g. a preemptible one (default: --partition)"},
			&cli.StringFlag{Name: "disclosed-qos", Usage: "QOS of disclosed pilots (default: --qos)"},
			&cli.StringFlag{Name: "account", Usage: "Slurm account to charge"},
			&cli.StringFlag{Name: "time", Usage: "pilots' time limit, Slurm format (e.g. 1:00:00)"},
			&cli.StringFlag{Name: "time-min", Usage: "with --time-max: the shortest pilot time limit, Slurm format"},
			&cli.StringFlag{Name: "time-max", Usage: "size each pilot's time limit from the queued work: its longest expected task plus --time-margin, from --time-min to this (Slurm format; instead of --time)"},
			&cli.DurationFlag{Name: "time-margin", Usage: "with --time-max: added to the longest queued task's expected run time", Value: pool.DefaultTimeMargin},
			&cli.StringFlag{Name: "mem", Usage: "each pilot's memory, sbatch --mem format (e.g. 16G); its worker offers that to tasks asking for memory"},
			&cli.StringFlag{Name: "output", Usage: "pilots' log file, sbatch --output (default batchd-pilot-%j.out in --chdir)"},
			&cli.StringFlag{Name: "chdir", Usage: "pilots' working directory (default: here)"},
			&cli.StringSliceFlag{Name: "sbatch-arg", Usage: "extra sbatch argument, repeatable (e.g. --sbatch-arg=--mem=4G)"},
			&cli.StringFlag{Name: "batchd", Usage: "path of batchd on the pilots' nodes (default: this binary)"},
			&cli.StringSliceFlag{Name: "worker-arg", Usage: "extra `batchd worker` argument, repeatable (e.g. --worker-arg=--no-suspend)"},
			&cli.BoolFlag{Name: "cancel-on-exit", Usage: "scancel every pilot of the pool when the pool stops"},
		},
		Action: func(c *cli.Context) error {
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
			token := c.String("token")
			os.Unsetenv("BATCH_WORKER_TOKEN")
			if f := c.String("token-file"); f != "" {
				t, err := worker.TokenFromFile(f, false)
				if err != nil {
					return err
				}
				token = t
			}
			if token == "" {
				return errors.New("no worker token: give --token-file (`batchd user add --worker NAME` makes one)")
			}
			bin := c.String("batchd")
			if bin == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--batchd: cannot find this binary: %w", err)
				}
				bin = exe
			}
			dir := c.String("chdir")
			if dir == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				dir = wd
			}
			dir, _ = filepath.Abs(dir)
			tokenDir := c.String("token-dir")
			if tokenDir == "" {
				tokenDir = filepath.Join(dir, ".batchd-pilot-tokens")
			}
			tokenDir, _ = filepath.Abs(tokenDir)
			pilotServer := c.String("pilot-server")
			if pilotServer == "" {
				pilotServer = c.String("server")
			}
			eng := &pool.Slurm{Pool: c.String("name"), Partition: c.String("partition"), QOS: c.String("qos"),
				DisclosedPartition: c.String("disclosed-partition"), DisclosedQOS: c.String("disclosed-qos"),
				Account: c.String("account"), Time: c.String("time"), Mem: c.String("mem"), Output: c.String("output"), Dir: dir,
				Args: c.StringSlice("sbatch-arg")}
			var tmin, tmax time.Duration
			for _, f := range []struct {
				name string
				d    *time.Duration
			}{{"time-min", &tmin}, {"time-max", &tmax}} {
				if v := c.String(f.name); v != "" {
					d, err := pool.SlurmDuration(v)
					if err != nil {
						return fmt.Errorf("--%s: %w", f.name, err)
					}
					*f.d = d
				}
			}
			if tmax > 0 && c.String("time") != "" {
				return errors.New("give --time or --time-max, not both")
			}
			ttl := c.Duration("token-ttl")
			if ttl == 0 && tmax > 0 {
				ttl = tmax + time.Hour
			}
			if ttl == 0 && c.String("time") != "" {
				limit, err := pool.SlurmDuration(c.String("time"))
				if err != nil {
					return fmt.Errorf("--time: %w", err)
				}
				ttl = limit + time.Hour
			}
			srv := batchv1connect.NewWorkerServiceClient(worker.NewHTTPClient(), c.String("server"),
				connect.WithInterceptors(client.BearerInterceptor(token)))
			argv := append([]string{bin, "worker", "--server", pilotServer}, c.StringSlice("worker-arg")...)
			p, err := pool.New(pool.Config{Name: c.String("name"), Slots: c.Int("slots"), MaxPilots: c.Int("max-pilots"),
				Disclosed: c.Int("disclosed"), Idle: c.Duration("idle"), Interval: c.Duration("interval"),
				BackoffMin: c.Duration("backoff"), BackoffMax: c.Duration("backoff-max"), RegisterWait: c.Duration("register-wait"),
				Worker: argv, TokenTTL: ttl, TokenDir: tokenDir, Logger: log,
				TimeMin: tmin, TimeMax: tmax, TimeMargin: c.Duration("time-margin")}, eng, srv)
			if err != nil {
				return err
			}
			err = p.Run(c.Context)
			if c.Bool("cancel-on-exit") {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if cerr := p.CancelAll(ctx); cerr != nil {
					log.Warn("cancel pilots", "err", cerr)
				}
			}
			return err
		},
	}
}
