// Package worker is the batchd worker agent: it registers with the server,
// takes start/kill/suspend/resume orders from the Assignments stream, runs
// each copy as a child process in its own process group, heartbeats progress
// and CPU time, and reports every copy's end until the server answers.
//
// The agent speaks the Connect protocol (over h2c for http:// servers, so the
// stream and the unary calls share one connection). It never drops a finished
// copy's result before the server has answered ReportFinished: results are
// held in memory across server restarts, network failures and
// re-registration, and listed as held copies when the agent registers again.
//
// Copies need Linux (process groups, Pdeathsig, /proc).
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
)

// Defaults used when the server or the Config leaves a value out.
const (
	defaultLease        = 15 * time.Second
	defaultOutputCap    = 16 << 20
	defaultPoll         = 250 * time.Millisecond
	defaultDrainTimeout = 10 * time.Second
	// reportTimeout is the least deadline of one ReportFinished (a lease
	// when longer): a result may carry megabytes of output.
	reportTimeout  = 10 * time.Second
	minProgressGap = time.Second
	backoffMin     = 200 * time.Millisecond
	backoffMax     = 5 * time.Second
)

// Config configures an agent. Zero values mean the documented defaults.
type Config struct {
	// Server is the server's base URL, such as http://127.0.0.1:8080.
	// Required.
	Server string
	// Name is the worker's stable name and id on the server. Default: the
	// name kept in StateDir by an earlier run, else host name + "-" + 6
	// random hex digits (kept in StateDir when StateDir is set).
	Name string
	// Slots is how many copies the worker runs at once. Default: NumCPU.
	Slots int
	// MemoryMB is the memory, MiB, the worker offers to tasks that ask
	// for memory (TaskSpec.MemoryMB). Default (0): AllocatedMemoryMB,
	// the machine's memory (MemTotal) or the limit of the worker's cgroup
	// where smaller; negative: none, so that such tasks never run here.
	MemoryMB int64
	// Pool and Partition are where the worker is: sets routed to a pool
	// or partition run only on workers that name it. Default: none (the
	// worker runs unrouted sets only).
	Pool, Partition string
	// GPUs are the GPU devices the worker offers to tasks that ask for
	// GPUs (TaskSpec.Gpus), as CUDA_VISIBLE_DEVICES names them (indices
	// or UUIDs). Each such copy gets devices of its own in its
	// CUDA_VISIBLE_DEVICES; on a worker with GPUs a copy that asks for
	// none gets an empty one. Default: none.
	GPUs []string
	// StateDir holds per-copy scratch directories (working directory and
	// progress file), a lock (one agent per directory) and, when Name is
	// empty, the generated name, kept for the next run. Default:
	// os.TempDir()/batchd-worker-NAME.
	StateDir string
	// HTTPClient carries the RPCs. Default: NewHTTPClient().
	HTTPClient *http.Client
	// Logger receives the agent's log. Default: slog.Default().
	Logger *slog.Logger

	// Version is sent on Register. Default: "dev".
	Version string
	// NoSuspend tells the server this worker cannot SIGSTOP/SIGCONT copies
	// (preemption then kills). Default false: it can.
	NoSuspend bool
	// Env holds variables (KEY=VALUE) every copy gets. A copy's
	// environment is built from scratch: PATH, LANG, LANGUAGE, LC_*, TZ and
	// TERM of the worker's own environment, then Env, then HOME (its
	// scratch directory), the task's own variables and the BATCH_* ones.
	// Nothing else of the worker's environment reaches a task, and the
	// tokens (BATCH_WORKER_TOKEN, BATCH_TOKEN) never do, even named here:
	// a task, another user's code, must not speak for the worker.
	Env []string
	// Isolation is how copies are kept from the worker, the server and
	// each other (see Isolation). Default: IsolationAuto.
	Isolation Isolation
	// SlotUIDs are the uids (and gids) a root worker runs copies as, one
	// per running copy. Default: DefaultSlotUIDs. Give each root worker on
	// a machine a range of its own.
	SlotUIDs UIDRange
	// BoundUser is the one batchd user whose tasks the worker runs (the
	// server assigns it no other's); required in effect with
	// IsolationNone, where a task sees everything the worker sees. The
	// worker also refuses any other owner's copy itself.
	BoundUser string
	// MaxProcs bounds the processes (threads included) of one copy, so
	// that a fork bomb ends its own copy, not the worker. Default:
	// DefaultMaxProcs; negative: no limit.
	MaxProcs int
	// Hide lists directories that copies must not see (the server's data
	// directory for batchd serve's slots). The state directory and the
	// scratch directories are hidden without being named.
	Hide []string
	// PollInterval is how often a copy's progress file and CPU time are
	// read. Default: 250 ms.
	PollInterval time.Duration
	// DrainTimeout bounds how long Run, once ctx is done, keeps trying to
	// deliver held results. Default: 10 s.
	DrainTimeout time.Duration
	// ClientOptions are added to the Connect client (for example
	// connect.WithGRPC()).
	ClientOptions []connect.ClientOption
	// Grace is how long, once the Run context is done, running copies may
	// go on to finish (and their results be reported) before the rest are
	// killed. Default 0: kill at once. A worker with a grace tells its
	// server nothing: the server must stop assigning it copies itself
	// (batchd serve's embedded slots: Server.Drain).
	Grace time.Duration
	// Hurry, when closed, cuts the grace short: the copies still running
	// are killed at once (a second SIGTERM).
	Hurry <-chan struct{}
	// Nice is added to the agent's nice value for every copy's process
	// (0 to 19, capped at 19; 0: the agent's own). Copies then yield the CPU to the agent, and on
	// `batchd serve` to the server sharing their host, whenever both want
	// it: the control plane answers while tasks saturate the cores. The
	// copy's process starts niced: it inherits the value of the thread that
	// forks it, which is set just before the fork and back just after.
	Nice int
	// BenchNoExec is for benchmarks of the control plane only: copies are
	// not run at all (no fork); each ends at once, exit 0, no output, as
	// a `true` that costs nothing. `batchd worker --bench-no-exec`
	// (hidden) sets it; bench/scaling_test.go uses it.
	BenchNoExec bool
	// Transport, when set, carries the worker protocol instead of Connect
	// to Server (HTTPClient and ClientOptions are then unused): `batchd
	// serve` hands its embedded slots the server's in-process transport.
	Transport wire.Transport
	// IdleExit, when positive, stops the worker as if ctx were done once
	// it has held no copy for that long (since it started or since its
	// last copy ended): a pilot in a batch system leaves when the work is
	// done. Run then returns nil.
	IdleExit time.Duration
	// HandBack is for pilots that a batch system ends with SIGTERM to the
	// whole job (the copies too) and SIGKILL after a grace: when ctx is
	// done the running copies are killed at once and handed back (reported
	// killed: the server loses them, queues their tasks again and bills
	// nothing for them); a copy that ends once the worker stops, whatever
	// its exit status, is handed back too, and so is one that failed (a
	// signal or a non-zero exit the worker did not cause) up to
	// handBackWait before the stop: the batch system's signal may reach it
	// first. Results of copies that ended before are delivered as usual.
	// Grace is ignored.
	HandBack bool
	// EndsAt is when the worker's allocation ends (a pilot's batch job
	// time limit; zero: never). The worker tells the server that it takes
	// copies until EndMargin before it, and the server starts none there
	// that it expects to run past that time.
	EndsAt time.Time
	// EndMargin is how long before EndsAt the worker stops taking copies.
	// Default: DefaultEndMargin, at most a quarter of the time left when
	// the worker starts.
	EndMargin time.Duration
}

// handBackWait is how long a copy that failed (a non-zero exit or a
// signal) waits, in HandBack mode, for the worker's own stop before its
// end counts as the task's result: the batch system signals the copies and
// the worker at about the same moment.
const handBackWait = 2 * time.Second

// Run runs the agent until ctx is done, registering, re-registering and
// reconnecting by itself whenever the server goes away or forgets it.
//
// When ctx is done Run stops taking work (it closes the stream and
// registers again with zero slots, listing only what it holds), kills the
// running copies (reported as killed, so the server queues their tasks
// again), delivers every held result for at most cfg.DrainTimeout, and
// returns. It returns an error if
// the configuration is unusable or if some results could not be delivered
// before the drain timeout; otherwise nil.
func Run(ctx context.Context, cfg Config) error {
	a, err := newAgent(cfg)
	if err != nil {
		return err
	}
	return a.run(ctx)
}

// agent is one running worker agent.
type agent struct {
	client     wire.Transport
	reports    reportBatch // reportmany.go
	log        *slog.Logger
	name       string
	hostname   string
	slots      int
	canSuspend bool
	memoryMB   int64
	pool, part string   // Config.Pool, Config.Partition
	gpus       *gpuPool // gpu.go
	version    string
	stateDir   string
	env        []string
	poll       time.Duration
	drain      time.Duration
	grace      time.Duration
	hurry      <-chan struct{}
	noExec     bool // Config.BenchNoExec
	idleExit   time.Duration
	handBack   bool
	// takeUntil is when the worker stops taking copies (zero: never;
	// pilotend.go).
	takeUntil time.Time
	// isolation is the mechanism in use, isolationWhy why it was chosen;
	// boundUser the one user whose copies run here ("" any); limits what
	// is enforced per copy (RegisterRequest.limits).
	isolation    Isolation
	isolationWhy string
	boundUser    string
	limits       string
	limitsWhy    string // why some limits are not enforced ("" when all are)
	sandbox      *sandbox
	maxProcs     int
	// scratchRoot holds the copies' scratch directories; oldScratch is an
	// earlier agent's, to clean up at start ("" when none).
	scratchRoot string
	oldScratch  string
	// freshState: this agent made the state directory, so no earlier
	// agent ran copies from it and none of theirs can be left (a pilot's
	// state directory, named after its job, is always new).
	freshState bool
	// stopped is closed when the worker starts stopping (ctx done or idle).
	stopped  chan struct{}
	lastBusy time.Time     // when a copy last started or ended; guarded by mu
	ended    chan struct{} // a copy ended, or its result was delivered (buffered 1)
	scratch  *scratchDirs
	paths    pathCache
	now      func() time.Time

	// comm lives until the drain ends: registration, heartbeats and reports
	// use it, so held results still go out after the work context is done.
	comm       context.Context
	commCancel context.CancelFunc
	copiesWG   sync.WaitGroup
	progressCh chan struct{} // a copy's progress changed (buffered 1)
	needRegCh  chan struct{} // registration was invalidated (buffered 1)
	// fatal carries the server's refusal of a worker that never registered
	// (no token, a wrong or revoked one, a name that is not its own):
	// retrying cannot help, so Run stops and says why.
	fatal chan error

	mu           sync.Mutex
	copies       map[int64]*copyRun
	stopping     bool // ctx is done: no new copies
	nice         int  // Config.Nice
	registered   bool
	gen          int           // registration generation, bumped on success
	regCh        chan struct{} // closed at the next successful registration
	workerID     string
	lease        time.Duration
	hbEvery      time.Duration
	outCap       int64
	keepCap      int64 // bytes of kept files per copy (keep.go)
	streamCancel context.CancelFunc
	undelivered  int
	// leaseUntil is when the lease ends unless renewed (zero before the
	// first registration); leaseLapsed says the copies were stopped
	// because it ended (see lease.go).
	leaseUntil  time.Time
	leaseLapsed bool
	leaseWake   chan struct{} // leaseUntil moved (buffered 1)
	// hc is the agent's own HTTP client, whose keepalive follows the
	// lease; nil when the Config gave a client or a Transport.
	hc *leaseClient
	// goodbye is set when ctx is done: register once more with zero slots.
	goodbye bool

	goodbyeTried chan struct{} // closed once a goodbye Register was answered or failed
	goodbyeOnce  sync.Once

	// forgotten are the copies that ended and were forgotten lately
	// (guarded by mu): a start naming one is stale.
	forgotten endedCopies
}

func newAgent(cfg Config) (*agent, error) {
	if !supported {
		return nil, errors.New("worker: copies run on Linux only")
	}
	if cfg.Server == "" && cfg.Transport == nil {
		return nil, errors.New("worker: no server URL")
	}
	if cfg.Nice < 0 || cfg.Nice > 19 {
		return nil, fmt.Errorf("worker: nice %d: tasks can be made nicer by 0 to 19, not more, and never less nice than the agent", cfg.Nice)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	a := &agent{
		log:          cfg.Logger,
		name:         cfg.Name,
		hostname:     host,
		slots:        cfg.Slots,
		canSuspend:   !cfg.NoSuspend,
		memoryMB:     cfg.MemoryMB,
		pool:         cfg.Pool,
		part:         cfg.Partition,
		gpus:         newGPUPool(cfg.GPUs),
		version:      cfg.Version,
		stateDir:     cfg.StateDir,
		env:          cfg.Env,
		poll:         cfg.PollInterval,
		drain:        cfg.DrainTimeout,
		grace:        cfg.Grace,
		noExec:       cfg.BenchNoExec,
		hurry:        cfg.Hurry,
		nice:         cfg.Nice,
		idleExit:     cfg.IdleExit,
		handBack:     cfg.HandBack,
		takeUntil:    takeUntil(cfg.EndsAt, cfg.EndMargin, time.Now()),
		stopped:      make(chan struct{}),
		ended:        make(chan struct{}, 1),
		now:          time.Now,
		progressCh:   make(chan struct{}, 1),
		needRegCh:    make(chan struct{}, 1),
		fatal:        make(chan error, 1),
		copies:       map[int64]*copyRun{},
		goodbyeTried: make(chan struct{}),
		regCh:        make(chan struct{}),
		leaseWake:    make(chan struct{}, 1),
		lease:        defaultLease,
		hbEvery:      defaultLease / 5,
		outCap:       defaultOutputCap,
		keepCap:      defaultKeepCap,
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.name == "" && a.stateDir != "" {
		a.name = readName(a.stateDir)
	}
	persist := a.name == "" && a.stateDir != ""
	if a.name == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		a.name = host + "-" + hex.EncodeToString(b[:])
	}
	a.workerID = a.name
	if a.slots <= 0 {
		a.slots = runtime.NumCPU()
	}
	switch {
	case a.memoryMB == 0:
		a.memoryMB = AllocatedMemoryMB()
	case a.memoryMB < 0:
		a.memoryMB = 0
	}
	if a.version == "" {
		a.version = "dev"
	}
	if a.stateDir == "" {
		a.stateDir = DefaultStateDir(a.name)
	}
	a.env = baseEnv(os.Environ(), a.env)
	if a.poll <= 0 {
		a.poll = defaultPoll
	}
	if a.drain <= 0 {
		a.drain = defaultDrainTimeout
	}
	if a.handBack {
		a.grace = 0
	}
	dir, err := filepath.Abs(a.stateDir)
	if err != nil {
		return nil, fmt.Errorf("worker: state dir: %w", err)
	}
	a.stateDir = dir // copies get absolute paths, whatever their working dir
	if _, err := os.Lstat(a.stateDir); errors.Is(err, fs.ErrNotExist) {
		a.freshState = true
	}
	if err := os.MkdirAll(a.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("worker: state dir: %w", err)
	}
	// The state directory is the worker's alone (its lock, its name, and
	// for a worker that runs copies as itself their scratch directories).
	if err := os.Chmod(a.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("worker: state dir: %w", err)
	}
	if err := a.setupIsolation(cfg); err != nil {
		return nil, err
	}
	if persist {
		// Keep a generated name in an explicit state dir, so a restarted
		// agent registers under the same name and the server learns at
		// once that the old process's copies are gone.
		if err := os.WriteFile(filepath.Join(a.stateDir, "name"), []byte(a.name+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("worker: state dir: %w", err)
		}
	}
	a.client = cfg.Transport
	if a.client == nil {
		hc := cfg.HTTPClient
		if hc == nil {
			a.hc = newLeaseClient(defaultLease)
			hc = &http.Client{Transport: a.hc}
		}
		a.client = ConnectTransport(hc, cfg.Server, cfg.ClientOptions...)
	}
	a.log = a.log.With("worker", a.name)
	return a, nil
}

// readName returns the name kept in dir, or "".
func readName(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "name"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (a *agent) run(ctx context.Context) error {
	lock, err := lockDir(a.stateDir)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer lock.Close()
	// Copies of an earlier agent on this state dir died with it, but what
	// they forked may not have: kill it, and drop their scratch dirs.
	if err := a.cleanScratch(); err != nil {
		return err
	}

	a.comm, a.commCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer a.commCancel()
	// Leaving when idle is stopping as when ctx is done: the loops follow
	// the work context.
	ctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	idle := make(chan struct{})
	if a.idleExit > 0 {
		a.mu.Lock()
		a.lastBusy = a.now()
		a.mu.Unlock()
		go a.idleWatch(ctx, idle)
	}
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); a.connLoop(ctx) }()
	go func() { defer loops.Done(); a.heartbeatLoop() }()
	go func() { defer loops.Done(); a.leaseLoop() }()
	a.log.Info("worker started", "slots", a.slots, "memory_mb", a.memoryMB, "gpus", a.gpus.count(), "state_dir", a.stateDir)
	if !a.takeUntil.IsZero() {
		a.log.Info("the allocation ends: no copy that would run past it", "takes_copies_until", a.takeUntil.Format(time.RFC3339))
	}
	a.logIsolation()

	select {
	case <-ctx.Done():
	case <-idle:
		a.log.Info("worker idle: leaving", "idle_exit", a.idleExit)
		stopWork()
	case err := <-a.fatal:
		// Never registered, so nothing runs and nothing is held.
		a.commCancel()
		loops.Wait()
		return err
	}
	close(a.stopped)
	if a.handBack {
		a.log.Info("worker stopping: handing running copies back to the server")
	}
	if a.grace > 0 {
		a.finishRunning()
	}
	a.log.Info("worker stopping: killing running copies, delivering held results", "drain", a.drain)
	// The protocol has no goodbye: register again with no slots, so the
	// server assigns nothing more here and at once loses any copy it
	// assigned that this agent never started (instead of a lease later).
	a.mu.Lock()
	a.stopping = true
	a.slots = 0
	a.goodbye = true
	ids := make([]int64, 0, len(a.copies))
	for id := range a.copies {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	select {
	case a.needRegCh <- struct{}{}:
	default:
	}
	for _, id := range ids {
		a.kill(id)
	}
	copiesDone := make(chan struct{})
	go func() { a.copiesWG.Wait(); close(copiesDone) }()
	t := time.NewTimer(a.drain)
	// Wait (at most the drain) for both: copies delivered, goodbye tried.
	// A nil channel is never ready, so each is waited for once.
	bye, copiesLeft := a.goodbyeTried, copiesDone
	for wait := 2; wait > 0; wait-- {
		select {
		case <-copiesLeft:
			copiesLeft = nil
		case <-bye:
			bye = nil
		case <-t.C:
			wait = 0
		}
	}
	t.Stop()
	a.commCancel()
	loops.Wait()
	// Deliverers give up at once now; only a copy whose process ignores
	// SIGKILL (uninterruptible sleep) can still be running.
	t = time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-copiesDone:
	case <-t.C:
		return errors.New("worker: copies still running after SIGKILL; giving up on them")
	}
	if a.sandbox.cg != nil {
		a.sandbox.cg.close()
	}
	a.mu.Lock()
	n := a.undelivered
	a.mu.Unlock()
	if n > 0 {
		return fmt.Errorf("worker: %d finished copies not delivered to the server", n)
	}
	a.log.Info("worker stopped")
	return nil
}

// idleWatch closes idle once the worker has held no copy for idleExit, or
// returns when ctx is done.
func (a *agent) idleWatch(ctx context.Context, idle chan<- struct{}) {
	tick := min(a.idleExit/4, time.Second)
	t := time.NewTicker(max(tick, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		quiet := len(a.copies) == 0 && a.registered && a.now().Sub(a.lastBusy) >= a.idleExit
		if quiet {
			// Take no copy from now on: one assigned meanwhile is lost
			// at the goodbye registration and runs elsewhere.
			a.stopping = true
		}
		a.mu.Unlock()
		if quiet {
			close(idle)
			return
		}
	}
}

// finishRunning, once the worker is stopping, waits for the copies that
// run to end by themselves and for their results to be delivered, for at
// most the grace (or until Hurry is closed). It takes no new copy
// meanwhile; suspended copies cannot end and are not waited for.
func (a *agent) finishRunning() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	t := time.NewTimer(a.grace)
	defer t.Stop()
	for {
		a.mu.Lock()
		// A copy that ended is waited for until its result is delivered:
		// the goodbye registration that follows would otherwise list it as
		// held, and the server, giving this worker no slots, would kill
		// it and drop its result.
		n := 0
		for _, c := range a.copies {
			if (c.state == copyStarting || c.state == copyRunning) && !c.killed || c.state == copyEnded {
				n++
			}
		}
		a.mu.Unlock()
		if n == 0 {
			return
		}
		a.log.Info("stopping: waiting for running copies to finish", "running", n, "grace", a.grace)
		select {
		case <-a.ended:
		case <-t.C:
			a.log.Warn("stopping: grace over; killing the copies still running", "running", n)
			return
		case <-a.hurry:
			a.log.Warn("stopping at once: killing the copies still running", "running", n)
			return
		}
	}
}
