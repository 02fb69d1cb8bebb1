package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/sched"
	"batchd/server"
	"batchd/store"
	"batchd/worker"
)

// serveCommand is `batchd serve`: the server, with local worker slots.
func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the batchd server (Connect, gRPC and gRPC-Web on one port) with local worker slots",
		Description: "Serves TaskSetService, WorkerService, BillingService and ClusterService, gRPC health and\n" +
			"reflection, /metrics (Prometheus) and the web page on one port, and runs --slots local\n" +
			"worker slots (one per CPU by default; 0 for none). State lives in SQLite under --data.\n" +
			"SIGTERM or SIGINT stops it gracefully: no new work is taken, copies running on the local\n" +
			"slots may finish for up to --drain (their results are recorded), the rest are killed and run\n" +
			"again after the next start. A second SIGTERM or SIGINT stops it at once.\n\n" +
			"Each worker, the local slots too, says how it keeps tasks apart (batchctl cluster, ISOLATION):\n" +
			"uid, owner-uid or namespaces run anyone's tasks; a worker without isolation runs only the tasks\n" +
			"of the user it is bound to, and one bound to nobody is refused at register unless the server\n" +
			"runs with --share-unisolated-workers (insecure: logged as a warning and shown in batchctl cluster).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "localhost:8080", EnvVars: []string{"BATCHD_LISTEN"}, Usage: "`ADDR` to listen on"},
			&cli.StringFlag{Name: "data", Value: "./batchd-data", EnvVars: []string{"BATCHD_DATA"}, Usage: "data `DIR` (created 0700) holding batchd.db"},
			&cli.IntFlag{Name: "slots", Value: runtime.NumCPU(), EnvVars: []string{"BATCHD_SLOTS"}, Usage: "local worker slots (0 = none; remote workers only)"},
			&cli.IntFlag{Name: "task-nice", EnvVars: []string{"BATCHD_TASK_NICE"},
				Usage: "run local slots' tasks this much nicer than the server (0-19), so that the API and dispatch keep their share of a host shared with other work; 0 = same priority"},
			&cli.DurationFlag{Name: "lease", Value: 15 * time.Second, EnvVars: []string{"BATCHD_LEASE"}, Usage: "worker lease: a worker that cannot renew it for this long stops its copies; it heartbeats every lease/5"},
			&cli.IntFlag{Name: "pilot-losses", EnvVars: []string{"BATCHD_PILOT_LOSSES"}, Value: 3, Usage: "a task whose copies pilots lose this many times at their ends (time limit, preemption) fails with that reason instead of running again (-1: never)"},
			&cli.DurationFlag{Name: "worker-retention", EnvVars: []string{"BATCHD_WORKER_RETENTION"}, Value: time.Hour, Usage: "a worker whose lease lapsed this long ago is marked gone: batchctl cluster lists it only with --all"},
			&cli.DurationFlag{Name: "lease-margin", EnvVars: []string{"BATCHD_LEASE_MARGIN"}, Usage: "how much longer than the lease the server waits before it runs a silent worker's copies again (default: lease/4, at least 1s)"},
			&cli.StringFlag{Name: "output-cap", Value: "16MiB", EnvVars: []string{"BATCHD_OUTPUT_CAP"}, Usage: "bytes kept per output stream (e.g. 16MiB, 512KiB, 1000000)"},
			&cli.StringFlag{Name: "keep-max-task", Value: "16MiB", EnvVars: []string{"BATCHD_KEEP_MAX_TASK"},
				Usage: "bytes of kept files (disclose --keep) stored per task, all its files together; a file over it is listed as not kept"},
			&cli.StringFlag{Name: "keep-max-user", Value: "1GiB", EnvVars: []string{"BATCHD_KEEP_MAX_USER"},
				Usage: "bytes of kept files one user stores, all results together (none: no cap); a file over it is listed as not kept"},
			&cli.StringFlag{Name: "policy", Value: string(sched.PolicySRPTxFCFS), EnvVars: []string{"BATCHD_POLICY"},
				Usage: "scheduling policy: srpt×fcfs, fcfs×fcfs, batch-srpt, batch-fcfs, interactive-srpt, interactive-fcfs (ASCII: srpt-x-fcfs)"},
			&cli.StringFlag{Name: "speculation", Value: string(sched.SpecHopperGRASS), EnvVars: []string{"BATCHD_SPECULATION"},
				Usage: "speculation: hopper+grass, grass (GRASS without Hopper), best-effort-late, budgeted-N or none"},
			&cli.StringFlag{Name: "preemption", Value: string(sched.PreemptSuspend), EnvVars: []string{"BATCHD_PREEMPTION"},
				Usage: "what requested work does to running disclosed copies: suspend, kill or off"},
			&cli.BoolFlag{Name: "preempt-requested", Value: true, EnvVars: []string{"BATCHD_PREEMPT_REQUESTED"},
				Usage: "preemptive SRPT in the requested class (srpt×fcfs, batch-srpt, batch-srpt-task, interactive-srpt; needs --preemption suspend): " +
					"when shorter requested work finds no free slot, suspend the requested copy with the most work left and resume it later on its own worker. " +
					"--preempt-requested=false: a running requested copy keeps its slot (shortest job first, not shortest remaining time)"},
			&cli.Float64Flag{Name: "price-slot-second", Value: 1, EnvVars: []string{"BATCHD_PRICE_SLOT_SECOND"}, Usage: "ledger price per billed slot-second"},
			&cli.Float64Flag{Name: "price-cpu-second", Value: 0, EnvVars: []string{"BATCHD_PRICE_CPU_SECOND"}, Usage: "ledger price per billed CPU second"},
			&cli.IntFlag{Name: "max-open-sets", Value: server.DefaultMaxOpenSets, EnvVars: []string{"BATCHD_MAX_OPEN_SETS"}, Usage: "per-user cap on task sets with unfinished tasks (-1: none)"},
			&cli.IntFlag{Name: "max-queued-tasks", Value: server.DefaultMaxQueuedTasks, EnvVars: []string{"BATCHD_MAX_QUEUED_TASKS"}, Usage: "per-user cap on unfinished tasks (-1: none)"},
			&cli.Float64Flag{Name: "rate", Value: server.DefaultRequestRate, EnvVars: []string{"BATCHD_RATE"}, Usage: "per-user calls a second, token bucket (-1: none)"},
			&cli.IntFlag{Name: "burst", Value: server.DefaultRequestBurst, EnvVars: []string{"BATCHD_BURST"}, Usage: "per-user calls at once (token bucket size)"},
			&cli.IntFlag{Name: "api-concurrency", EnvVars: []string{"BATCHD_API_CONCURRENCY"},
				Usage: "unary API calls read and run at once; more wait their turn, and while workers report they get turns a quarter of the time, so that API traffic cannot take the CPU that dispatch needs (default: half the CPUs, at least 1)"},
			&cli.StringFlag{Name: "max-request-memory", Value: "512MiB", EnvVars: []string{"BATCHD_MAX_REQUEST_MEMORY"},
				Usage: "memory request bodies in flight may hold, each user at most half (e.g. 512MiB, 2GiB); more wait up to 5 s, then are refused with a hint to retry"},
			&cli.IntFlag{Name: "procs", EnvVars: []string{"BATCHD_PROCS"}, DefaultText: "2 per CPU (at least 4) while API calls come, 1 per CPU (at least 2) while only workers call; GOMAXPROCS in the environment wins",
				Usage: "Go processors (GOMAXPROCS) of the server, fixed: more than the CPUs lets API calls and the dispatch path run while others wait inside SQLite or a fork, and costs the dispatch path CPU"},
			&cli.BoolFlag{Name: "no-fair-share", EnvVars: []string{"BATCHD_NO_FAIR_SHARE"}, Usage: "disclosed work in plain FCFS order instead of a per-user fair share (--fair-share=false is the requested class's switch)"},
			&cli.BoolFlag{Name: "fair-share", Value: true, EnvVars: []string{"BATCHD_FAIR_SHARE"},
				Usage: "split requested work between users by weight (batchctl users weight) while several wait; false: SRPT across all users, as in the papers"},
			&cli.DurationFlag{Name: "fair-share-half-life", Value: time.Hour, EnvVars: []string{"BATCHD_FAIR_SHARE_HALF_LIFE"},
				Usage: "half-life of users' usage (slot-seconds of finished requested work): between users with equal slots, the one who used less goes first"},
			&cli.StringSliceFlag{Name: "task-dirs", EnvVars: []string{"BATCHD_TASK_DIRS"},
				Usage: "absolute `DIRS` (comma-separated) a task's --dir must be in or under, e.g. /home,/scratch (default: anywhere but --data, which is always refused)"},
			&cli.BoolFlag{Name: "share-unisolated-workers", EnvVars: []string{"BATCHD_SHARE_UNISOLATED_WORKERS"},
				Usage: "INSECURE: let workers that cannot isolate tasks (isolation none) and are bound to no user run any user's tasks, " +
					"where each task can read the worker's token and the other tasks' files; without it such a worker is refused at register " +
					"(bind it with batchd worker --user NAME instead). Shown in batchctl cluster"},
			&cli.DurationFlag{Name: "drain", Value: 30 * time.Second, EnvVars: []string{"BATCHD_DRAIN"},
				Usage: "on SIGTERM, how long copies running on the local slots may go on to finish (0: kill them at once)"},
			&cli.StringFlag{Name: "cpu-profile", EnvVars: []string{"BATCHD_CPU_PROFILE"}, Hidden: true,
				Usage: "write a Go CPU profile of the server to `FILE` until it stops (for performance work)"},
			&cli.StringFlag{Name: "alloc-profile", EnvVars: []string{"BATCHD_ALLOC_PROFILE"}, Hidden: true,
				Usage: "write a Go allocation profile of the server to `FILE` when it stops (for performance work)"},
			&cli.BoolFlag{Name: "bench-synchronous-off", Hidden: true,
				Usage: "benchmarks only: SQLite synchronous=OFF, so that a power loss may lose or corrupt committed work (bench/scaling.sh's ablation)"},
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"BATCHD_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
		}, append(isolationFlags("BATCHD_"), specTuningFlags()...)...),
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	policy, err := sched.ParsePolicy(c.String("policy"))
	if err != nil {
		return err
	}
	spec, budget, err := sched.ParseSpeculation(c.String("speculation"))
	if err != nil {
		return err
	}
	pre, err := sched.ParsePreemption(c.String("preemption"))
	if err != nil {
		return err
	}
	reqMem, err := parseSize(c.String("max-request-memory"))
	if err != nil || reqMem <= 0 {
		return fmt.Errorf("--max-request-memory: want a size such as 512MiB (got %q)", c.String("max-request-memory"))
	}
	outCap, err := parseSize(c.String("output-cap"))
	if err != nil {
		return fmt.Errorf("--output-cap: %w", err)
	}
	keepTask, err := parseSize(c.String("keep-max-task"))
	if err != nil {
		return fmt.Errorf("--keep-max-task: %w", err)
	}
	keepUser := int64(-1)
	if v := c.String("keep-max-user"); v != "none" {
		if keepUser, err = parseSize(v); err != nil {
			return fmt.Errorf("--keep-max-user: %w (or none)", err)
		}
	}
	slots := c.Int("slots")
	if slots < 0 {
		return fmt.Errorf("--slots must be 0 or more")
	}
	if n := c.Int("task-nice"); n < 0 || n > 19 {
		return fmt.Errorf("--task-nice %d: give 0 (tasks at the server's priority) to 19 (the lowest)", n)
	}
	cpus := runtime.GOMAXPROCS(0) // the CPUs this process may use (cgroup quota included)
	apiConc := c.Int("api-concurrency")
	if apiConc <= 0 {
		apiConc = max(1, cpus/2)
	}
	var procsPolicy server.ProcsPolicy
	if procs := c.Int("procs"); procs < 0 {
		return fmt.Errorf("--procs %d: give 1 or more, or 0 for the default (by traffic: %d, or %d while only workers call)", procs, serveProcs(cpus), workerProcs(cpus))
	} else if procs > 0 { // set by flag or BATCHD_PROCS: wins over GOMAXPROCS
		runtime.GOMAXPROCS(procs)
	} else if os.Getenv("GOMAXPROCS") == "" {
		procsPolicy = server.ProcsPolicy{Low: workerProcs(cpus), High: serveProcs(cpus)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	if p := c.String("cpu-profile"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if p := c.String("alloc-profile"); p != "" {
		defer func() {
			f, err := os.Create(p)
			if err != nil {
				log.Error("--alloc-profile", "err", err.Error())
				return
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				log.Error("--alloc-profile", "err", err.Error())
			}
		}()
	}
	data := c.String("data")
	// The local slots' isolation, resolved before the server starts: a
	// worker without isolation runs the first admin's tasks only.
	wcfg := worker.Config{Hide: []string{data}}
	if err := isolationConfig(c, &wcfg); err != nil {
		return err
	}
	if slots > 0 {
		iso, _, err := worker.ChooseIsolation(wcfg.Isolation)
		if err != nil {
			return err
		}
		wcfg.Isolation = iso
		if iso == worker.IsolationNone {
			wcfg.BoundUser = server.FirstAdmin
		}
	}
	srv, err := server.New(server.Config{
		Listen: c.String("listen"), DataDir: data, Lease: c.Duration("lease"), LeaseMargin: c.Duration("lease-margin"), OutputCap: outCap,
		KeepMaxTask: keepTask, KeepMaxUser: keepUser,
		PilotLosses: c.Int("pilot-losses"), WorkerRetention: c.Duration("worker-retention"),
		Sched: sched.Config{Policy: policy, Speculation: spec, Budget: budget, Preemption: pre, PreemptRequested: c.Bool("preempt-requested"),
			FairShareHalfLife: halfLifeSeconds(c.Duration("fair-share-half-life")),
			VirtualFactor:     c.Float64("virtual-factor"), LastWaveCopies: c.Int("last-wave-copies"), LastWaveShare: c.Bool("last-wave-share")},
		NoDisclosedFairShare: c.Bool("no-fair-share"), NoFairShare: !c.Bool("fair-share"),
		Logger: log, Version: version,
		Prices:      store.Prices{SlotSecond: c.Float64("price-slot-second"), CPUSecond: c.Float64("price-cpu-second")},
		MaxOpenSets: c.Int("max-open-sets"), MaxQueuedTasks: c.Int("max-queued-tasks"),
		RequestRate: c.Float64("rate"), RequestBurst: c.Int("burst"), APIConcurrency: apiConc, MaxRequestMemory: reqMem,
		Procs: procsPolicy,
		// The server is the whole process: it may tune the process's
		// garbage collector around its big allocations.
		GC:                  &processGC{},
		ShareUnisolated:     c.Bool("share-unisolated-workers"),
		TaskDirs:            c.StringSlice("task-dirs"),
		BenchSynchronousOff: c.Bool("bench-synchronous-off"),
	})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		return err
	}
	if c.Bool("share-unisolated-workers") {
		log.Warn("INSECURE: --share-unisolated-workers: workers without isolation run any user's tasks; " +
			"a task on one can read its worker's token and the other users' tasks' files")
	}
	fmt.Fprintf(c.App.Writer, "batchd serving on %s (data %s, %d local slots)\n", srv.URL(), data, slots)
	if srv.AdminToken() != "" {
		fmt.Fprintf(c.App.Writer, "created user %q (admin); its token is in %s (batchctl on this machine finds it)\n",
			server.FirstAdmin, filepath.Join(data, server.AdminTokenFile))
	}

	ctx := c.Context
	// workerDone is closed when the local slots have stopped (at once when
	// there are none), so both waits below see it.
	workerDone := make(chan struct{})
	var workerErr error
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	localName := ""
	hurry := make(chan struct{})
	if slots > 0 {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		localName = "local-" + host
		// The embedded slots speak to the server in-process (no HTTP,
		// protobuf encoding or compression on their dispatch path).
		go func() {
			defer close(workerDone)
			wcfg.Transport, wcfg.Name, wcfg.Slots = srv.LocalTransport(), localName, slots
			wcfg.Pool = sched.LocalPool
			wcfg.StateDir, wcfg.Logger, wcfg.Version = filepath.Join(data, "worker"), log.With("part", "local-worker"), version
			wcfg.Grace, wcfg.Hurry, wcfg.Nice = c.Duration("drain"), hurry, c.Int("task-nice")
			workerErr = worker.Run(wctx, wcfg)
		}()
	} else {
		close(workerDone)
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case <-workerDone:
		if workerErr != nil {
			log.Error("local worker stopped", "err", workerErr.Error())
		}
		<-ctx.Done()
		log.Info("shutting down")
	}
	// A second signal stops at once: running copies are killed.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			log.Warn("second signal: stopping at once")
			close(hurry)
		case <-workerDone:
		}
	}()
	// No new work from now on; the local slots finish what runs (for at
	// most --drain), report it while the server still listens, and kill
	// the rest.
	if localName != "" {
		srv.Drain(sched.WorkerID(localName))
	} else {
		srv.Drain()
	}
	stopWorker()
	wait := c.Duration("drain") + 15*time.Second
	select {
	case <-workerDone:
	case <-time.After(wait):
		log.Warn("local worker did not stop in time")
	}
	return srv.Close()
}

// parseSize reads a byte count such as 16MiB, 512KiB, 2GiB, 16M or 1000.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (want a positive number of bytes, e.g. 16MiB)", s)
	}
	return n * mult, nil
}

// serveProcs is the server's default GOMAXPROCS on cpus CPUs while API
// calls come (server.ProcsPolicy): 2 per CPU, at least 4. A goroutine
// inside a cgo call (every SQLite statement) or a fork holds its
// processor until the runtime's monitor takes it back,
// which on a busy host takes up to 10 ms; with one processor per CPU the
// API's goroutines and the dispatch path's waited for each other's. More
// than 2 per CPU costs CPU instead: idle processors spin looking for work,
// the monitor wakes every 20 us, and the writer's own SQLite CPU per task
// rose. On 2 CPUs, 4 against 8 (docs/benchmarks.md, "Settings compared:
// --procs"): the pipeline at 64 slots 0.70 -> 0.80 of fork/exec and 0.46
// -> 0.36 ms of server CPU a task, the same at 16 slots; an API read's
// p50 under the users' load 9 -> 18 ms, its p99 about the same. One per
// CPU took a fifth less CPU again (0.35 -> 0.29 ms at 64 slots), but a
// heartbeat then waited for one of two threads busy with big discloses:
// at most 0.08-0.31 s a run against 0.03-0.24 s with 4, from outside
// (bench/bigdisclose.sh).
func serveProcs(cpus int) int { return max(4, 2*cpus) }

// workerProcs is the server's GOMAXPROCS by default while only workers
// call (server.ProcsPolicy): one per CPU, at least 2. On 2 CPUs, against
// 4 (docs/benchmarks.md, "Settings compared: --procs"): 0.35 -> 0.29 ms
// of server CPU a task at 64 slots and 0.42 -> 0.34 at 16, from 9.6
// thread switches a task to 6.
func workerProcs(cpus int) int { return max(2, cpus) }

// halfLifeSeconds turns --fair-share-half-life into the scheduler's
// seconds: 0 or less means no decay (negative for sched.Config).
func halfLifeSeconds(d time.Duration) float64 {
	if d <= 0 {
		return -1
	}
	return d.Seconds()
}
