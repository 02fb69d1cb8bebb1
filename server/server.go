// Package server is batchd's network face: the Connect handlers of
// TaskSetService, WorkerService, BillingService and ClusterService on one
// port (Connect, gRPC and gRPC-Web; HTTP/1.1 and h2c), gRPC health and
// reflection, Prometheus /metrics, and the web page at /.
//
// It owns the one sched.Scheduler of the process. Every state change is
// committed to the store first, then applied to the scheduler, then
// broadcast to watchers, all under one mutex; the scheduler's decisions are
// persisted before workers hear of them.
//
// Tests and tools start a real server in-process on a free port:
//
//	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
//	err = srv.Start() // srv.URL() is "http://127.0.0.1:PORT"
//	defer srv.Close()
//
// Every service call needs a bearer token: on first start the server
// creates the admin user (srv.AdminToken(), also in DataDir/admin.token),
// and srv.LocalWorkerToken() is a worker token that lives only in the
// process, for embedded worker slots (see Caller for the roles).
//
// Or serve srv.Handler() with httptest, leave the dispatch loop off
// (TickInterval < 0), pin Config.Now and call DispatchOnce to lapse leases
// and run the scheduler without waiting.
package server

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"batchd/internal/wire"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
	"batchd/store"
	"batchd/web"
)

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	// Listen is the address to listen on ("127.0.0.1:0" picks a free
	// port). New opens it before it touches the data directory, so a busy
	// port creates nothing. Empty: New does not listen, and Start listens
	// on "localhost:8080".
	Listen string
	// Listener, when set, is used instead of Listen (the server closes it).
	Listener net.Listener
	// DataDir holds the SQLite database batchd.db (created 0700). Required.
	// The server holds it locked (LockFile) from New to Close.
	DataDir string
	// Lease is how long a worker's copies may run without a renewal
	// (default 15 s). Both sides hold it: a worker that has not renewed
	// its lease for Lease stops its copies, and the server declares them
	// lost (and runs them again) only when the worker has been silent for
	// Lease + LeaseMargin, so that a copy and its re-run never overlap.
	// Workers heartbeat every Lease/5 (see LeaseTiming).
	Lease time.Duration
	// LeaseMargin is how much longer than the lease the server waits
	// before it declares a silent worker's copies lost: room for the
	// worker's clock running slow and for stopping its copies. Default:
	// Lease/4, at least one second.
	LeaseMargin time.Duration
	// HeartbeatWait bounds how long a registered worker's heartbeat waits
	// for its write before it is answered without it (default 20 ms;
	// heartbeat_write.go). A test that needs the write's own answer, an
	// error included, sets it long.
	HeartbeatWait time.Duration
	// OutputCap is the most bytes kept per output stream (default 16 MiB).
	OutputCap int64
	// KeepMaxTask is the most bytes of kept files (TaskSpec.keep) kept per
	// copy, all its files together (default DefaultKeepMaxTask);
	// KeepMaxUser the most one user stores, all results together (default
	// DefaultKeepMaxUser; negative: no cap). Files over either are listed
	// as not kept, with the reason.
	KeepMaxTask, KeepMaxUser int64
	// WorkerRetention is how long a worker whose lease lapsed stays listed
	// as lease-lapsed before it is marked gone (default 1 h): a pilot its
	// batch system killed never says goodbye.
	WorkerRetention time.Duration
	// PilotLosses is how many copies of a task pilots may lose at their
	// ends (hand-back or lapse) before the task fails with that reason
	// instead of running again (default store.DefaultPilotLosses; negative:
	// never).
	PilotLosses int
	// Sched configures the scheduler (FirstCopyID is set by the server, and
	// DisclosedFairShare unless NoDisclosedFairShare).
	Sched sched.Config
	// NoDisclosedFairShare leaves the disclosed class in plain FCFS order;
	// by default the server shares it fairly between users
	// (sched.Config.DisclosedFairShare).
	NoDisclosedFairShare bool
	// NoFairShare leaves the requested class in SRPT order across all
	// users; by default the server splits it between users by weight
	// (sched.Config.FairShare).
	NoFairShare bool
	// Now is the clock (default time.Now); tests pin it.
	Now func() time.Time
	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
	// Version is reported to workers and in GetCluster.
	Version string
	// TickInterval is how often the dispatch loop runs DispatchOnce after
	// Start (default 1 s; negative: never, tests call DispatchOnce).
	TickInterval time.Duration
	// WatchKeepalive is how long a WatchTaskSet stream stays silent before
	// the server sends the set's summary with no tasks, so that clients
	// can tell a quiet stream from a dead connection (default
	// DefaultWatchKeepalive; negative: never).
	WatchKeepalive time.Duration

	// Prices are the ledger's prices per slot-second and per CPU second
	// (zero: both 0, nothing costs money, but slot and CPU seconds are still
	// billed; batchd serve defaults to 1 per slot-second).
	Prices store.Prices
	// MaxOpenSets caps each user's task sets with unfinished tasks
	// (default DefaultMaxOpenSets; negative: no cap).
	MaxOpenSets int
	// MaxQueuedTasks caps each user's unfinished (disclosed or requested)
	// tasks (default DefaultMaxQueuedTasks; negative: no cap).
	MaxQueuedTasks int
	// RequestRate caps each user's calls a second, with RequestBurst at
	// once (defaults DefaultRequestRate and DefaultRequestBurst; negative
	// rate: no cap). Worker tokens are not limited.
	RequestRate  float64
	RequestBurst int
	// APIConcurrency is how many unary API calls (all but the worker
	// protocol and streams) are read, run and answered at once; more wait
	// their turn, and while worker calls are in progress they get turns
	// only for their share of the time (apiGate; default: half the
	// processors, at least 1). It keeps CPU for dispatch: the local
	// slots, worker reports and the scheduler go ahead of API traffic.
	APIConcurrency int
	// Procs, when on (High > Low > 0), changes the server's Go processors
	// with its traffic (ProcsPolicy); otherwise the process's GOMAXPROCS
	// stays as it is.
	Procs ProcsPolicy
	// MaxRequestMemory is the budget, in bytes, of memory that request
	// bodies in flight may hold, each user at most half of it (see
	// admission; default DefaultMaxRequestMemory).
	MaxRequestMemory int64
	// BenchSynchronousOff opens the store with synchronous=OFF: for a
	// benchmark's ablation only (a power loss may then lose or corrupt
	// committed work).
	BenchSynchronousOff bool
	// GC steers the process's garbage collector around the server's big,
	// short-lived allocations (see GCPolicy). nil leaves the collector
	// alone.
	GC GCPolicy
	// ShareUnisolated lets a worker without isolation (RegisterRequest
	// isolation "none") and bound to no user register and run any user's
	// tasks, where each of those tasks can read the worker's token and the
	// others' files (batchd serve --share-unisolated-workers). Off, such a
	// worker is refused at Register (FailedPrecondition).
	ShareUnisolated bool
	// TaskDirs are the directories (each absolute) a task's working
	// directory must be in or under (batchd serve --task-dirs); empty:
	// anywhere but the data directory, which is always refused.
	TaskDirs []string
}

// Server is one batchd server: store, scheduler, handlers and listener.
type Server struct {
	cfg Config
	db  *store.DB
	log *slog.Logger
	now func() time.Time
	// lastRetire is when retireWorkers last ran (guarded by mu).
	lastRetire time.Time
	// dirs decides which working directories a task may ask for.
	dirs taskDirs

	// mu serializes every state change: store transaction, scheduler
	// event, Decide and the delivery of decisions to worker queues. It is
	// taken through lockWorker or apiWrite (see dispatch.go).
	mu sync.Mutex
	// apiQ is the API lane's queue of writes (apiWrite).
	apiQ group[*apiOp]
	// heard holds, per registered worker, when it was last heard
	// (sched.WorkerID → *atomic.Int64, see heardAt): set without mu.
	heard sync.Map
	// apiBatchSeen, when set (tests), sees each API batch with mu held.
	apiBatchSeen func([]*apiOp)
	// requestsHeard are the request calls the scheduler heard since its
	// last decision, recorded with the next one (requestheard.go). Held
	// under mu.
	requestsHeard []store.RequestHeard
	// heartbeatQ holds what answered heartbeats found until the scheduler
	// hears it (applyHeartbeats).
	heartbeatQ group[*heartbeatFound]
	// heartbeatWriters holds each registered worker's heartbeat writes
	// (sched.WorkerID → *heartbeatWriter; heartbeat_write.go).
	heartbeatWriters sync.Map
	// reporting holds the copies whose ends' reports are being handled
	// (sched.CopyID → struct{}): no heartbeat counts them missing.
	reporting sync.Map
	// heartbeatWriteFunc and heartbeatApplyFunc, when set (tests), are
	// called before a registered worker's heartbeat's write, and by
	// applyHeartbeats before it takes mu (heartbeat_lane.go).
	heartbeatWriteFunc, heartbeatApplyFunc func()
	// draining is set by Drain: calls that add work are refused.
	draining atomic.Bool
	sched    *sched.Scheduler
	workers  map[sched.WorkerID]*workerConn
	// pools holds the elastic pools' last pilot reports (ReportPilots).
	pools pilotBook

	// finishQ is the group commit of ReportFinished (see finish); under
	// load it holds ends back for more (finishgather.go).
	finishQ group[*finishCall]

	// history is the last hour of samples for GetHistory (history.go).
	history history

	statsMu sync.RWMutex
	stats   sched.Stats       // a copy of sched.Stats() after the last change
	shares  []sched.UserShare // a copy of sched.UserShares() (refreshShares)

	watch   *broker
	metrics *metrics
	// gate admits the unary API calls, worker calls first (apigate.go).
	gate *apiGate
	// procs follows API traffic with the Go processors (nil: fixed).
	procs *procsControl
	// bodies is the memory budget of request bodies in flight.
	bodies *admission
	// owners caches the owners of sets admins named (ownerFor).
	owners ownerCache
	dm     dispatchMetrics
	lm     laneMetrics
	limits *rateLimiter

	// localWorkerHash is the hash of the embedded worker's token, which
	// lives only in this process (see LocalWorkerToken).
	localWorkerToken, localWorkerHash string
	// workerOwners caches the worker user each worker name is bound to.
	workerOwners sync.Map // sched.WorkerID → string
	// adminToken is the token minted for the first admin on first start
	// ("" on later starts).
	adminToken string
	handler    http.Handler
	startedAt  time.Time
	// known is the memory of started copies for their ends, under mu
	// (finishknown.go).
	known knownCopies

	done chan struct{}
	// live holds the output of copies somebody follows (live.go).
	live     *liveHub
	closeMu  sync.Mutex
	closed   bool
	httpSrv  *http.Server
	ln       net.Listener
	loopDone chan struct{}
	// served counts the goroutines Start started (serve, trimMemory), which
	// Close waits for.
	served sync.WaitGroup
	// lock is the open, flocked LockFile (see New); Close releases it.
	lock *os.File
}

// New listens on cfg.Listen (when set), locks cfg.DataDir, opens the store
// in it, rebuilds the scheduler from it and builds the handlers, in that
// order: a busy port, or a data directory that another server holds
// (ErrDataDirInUse), fails before anything is created. Call Start to serve,
// or serve Handler yourself and call DispatchOnce; Close releases
// everything.
func New(cfg Config) (srv *Server, err error) {
	if cfg.DataDir == "" {
		return nil, sched.Errorf(sched.EINVALID, "no data directory")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 15 * time.Second
	}
	if cfg.WorkerRetention <= 0 {
		cfg.WorkerRetention = time.Hour
	}
	if cfg.LeaseMargin <= 0 {
		cfg.LeaseMargin = max(cfg.Lease/4, time.Second)
	}
	if cfg.HeartbeatWait <= 0 {
		cfg.HeartbeatWait = heartbeatWait
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = store.DefaultOutputCap
	}
	if cfg.KeepMaxTask <= 0 {
		cfg.KeepMaxTask = DefaultKeepMaxTask
	}
	if cfg.KeepMaxUser == 0 {
		cfg.KeepMaxUser = DefaultKeepMaxUser
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.WatchKeepalive == 0 {
		cfg.WatchKeepalive = DefaultWatchKeepalive
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.GC == nil {
		cfg.GC = noGC{}
	}
	cfg.Sched.DisclosedFairShare = !cfg.NoDisclosedFairShare
	cfg.Sched.FairShare = !cfg.NoFairShare
	if cfg.MaxOpenSets == 0 {
		cfg.MaxOpenSets = DefaultMaxOpenSets
	}
	if cfg.MaxQueuedTasks == 0 {
		cfg.MaxQueuedTasks = DefaultMaxQueuedTasks
	}
	if cfg.RequestRate == 0 {
		cfg.RequestRate = DefaultRequestRate
	}
	if cfg.APIConcurrency <= 0 {
		cfg.APIConcurrency = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if cfg.MaxRequestMemory <= 0 {
		cfg.MaxRequestMemory = DefaultMaxRequestMemory
	}
	if cfg.RequestBurst <= 0 {
		cfg.RequestBurst = DefaultRequestBurst
	}
	for _, p := range []float64{cfg.Prices.SlotSecond, cfg.Prices.CPUSecond} {
		if !(p >= 0) || math.IsInf(p, 1) {
			return nil, sched.Errorf(sched.EINVALID, "prices must be finite and not negative (got %g per slot-second, %g per CPU second)",
				cfg.Prices.SlotSecond, cfg.Prices.CPUSecond)
		}
	}
	ln := cfg.Listener
	if ln == nil && cfg.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
	}
	lock, cleanup, err := lockDataDir(cfg.DataDir)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	// From here on a failure closes what it opened, in reverse.
	var db *store.DB
	defer func() {
		if err == nil {
			return
		}
		if db != nil {
			db.Close()
		}
		lock.Close()
		cleanup()
		if ln != nil {
			ln.Close()
		}
	}()
	if fi, err := os.Stat(cfg.DataDir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		cfg.Logger.Warn("the data directory is open to other local users; it holds everyone's task specs and outputs (chmod 700 it)",
			"dir", cfg.DataDir, "mode", fi.Mode().Perm().String())
	}
	// The database holds every user's specs and outputs: create it 0600
	// whatever the umask (SQLite gives its -wal and -shm files the mode of
	// the database file).
	dbPath := filepath.Join(cfg.DataDir, "batchd.db")
	f, err := os.OpenFile(dbPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create database file: %w", err)
	}
	f.Close()
	db = store.NewDB(dbPath)
	db.Now, db.OutputCap, db.Prices = cfg.Now, cfg.OutputCap, cfg.Prices
	db.KeepUserCap = max(cfg.KeepMaxUser, 0)
	db.SetPilotLossLimit(cfg.PilotLosses)
	db.BenchSynchronousOff = cfg.BenchSynchronousOff
	if err := db.Open(); err != nil {
		db = nil
		return nil, err
	}
	dirs, err := newTaskDirs(cfg.DataDir, cfg.TaskDirs)
	if err != nil {
		return nil, sched.Errorf(sched.EINVALID, "%v", err)
	}
	s := &Server{cfg: cfg, db: db, log: cfg.Logger, now: cfg.Now, workers: map[sched.WorkerID]*workerConn{}, apiQ: group[*apiOp]{max: maxAPIBatch, maxWork: maxAPIBatchWork, work: func(op *apiOp) int { return op.work }}, dirs: dirs,
		watch: newBroker(), live: newLiveHub(cfg.OutputCap), done: make(chan struct{}), startedAt: cfg.Now(),
		limits: newRateLimiter(cfg.RequestRate, cfg.RequestBurst), ln: ln, lock: lock,
		gate: newAPIGate(cfg.APIConcurrency, time.Now), bodies: newAdmission(cfg.MaxRequestMemory)}
	if cfg.Procs.on() {
		s.procs = newProcsControl(cfg.Procs, runtime.GOMAXPROCS, time.Now)
	}
	s.finishQ.gather = newGatherRule(func() int { return s.statsSnapshot().RunningCopies }, &s.dm.finishHeld)
	tok, err := store.NewToken()
	if err != nil {
		return nil, err
	}
	s.localWorkerToken, s.localWorkerHash = tok, store.HashToken(tok)
	if err := s.firstAdmin(context.Background()); err != nil {
		return nil, err
	}
	if err := s.dropStagedLeftovers(context.Background()); err != nil {
		return nil, err
	}
	if err := s.rebuild(context.Background()); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(s)
	s.metrics.reg.MustRegister(s.dm.collectors(s.db)...)
	s.metrics.reg.MustRegister(s.lm.collectors()...)
	s.metrics.reg.MustRegister(storeFileCollectors(s.db)...)
	s.metrics.reg.MustRegister(s.bodies.collectors()...)
	s.metrics.reg.MustRegister(s.gate.collectors()...)
	s.metrics.reg.MustRegister(procsCollectors(s.procs)...)
	s.metrics.reg.MustRegister(s.watch.collectors()...)
	s.metrics.account(s.startedAt, s.statsSnapshot())
	s.handler = s.routes()
	return s, nil
}

// rebuild creates the scheduler and feeds it what the store holds: workers
// expected back (each gets one lease to register again), unfinished tasks,
// the run times of the latest winning copies and of the copies that lost
// their races (for β and t_new) and live copies.
func (s *Server) rebuild(ctx context.Context) error { return s.load(ctx, true) }

// resync replaces the scheduler with one built from what the store holds,
// after a transaction that did not commit left the scheduler ahead of the
// store (it heard of copies' ends and decided on them). Connected workers
// keep their streams and the orders queued for them; the store's live
// copies are attached again. Call with mu held.
func (s *Server) resync(cause error) {
	s.log.Error("the store refused a commit; rebuilding the scheduler from the store", "err", cause.Error())
	if err := s.load(context.Background(), false); err != nil {
		s.log.Error("rebuild the scheduler", "err", err.Error())
	}
}

// load builds the scheduler from the store: at start (fresh) with a new
// connection for each worker the store expects back, else keeping the
// connections the server has.
func (s *Server) load(ctx context.Context, fresh bool) error {
	// With 10⁶ queued tasks the snapshot is a hundred megabytes read once
	// and dropped: the collector may run less often while it is built and
	// applied, and give the garbage back to the system right after.
	defer s.cfg.GC.Loosen()()
	snap, err := s.db.Load(ctx)
	if err != nil {
		return fmt.Errorf("load state: %w", err)
	}
	cfg := s.cfg.Sched
	cfg.FirstCopyID = snap.MaxCopyID + 1
	sc, err := sched.New(cfg)
	if err != nil {
		return err
	}
	if fresh {
		// The configuration this start runs with, for `batchd sim replay`.
		rec := s.cfg.Sched
		rec.FirstCopyID = 0
		if err := s.db.RecordSchedRun(ctx, rec); err != nil {
			return fmt.Errorf("record scheduler configuration: %w", err)
		}
	}
	now := s.now()
	if err := s.restoreFairShare(ctx, sc, now); err != nil {
		return fmt.Errorf("restore fair share: %w", err)
	}
	s.sched = sc
	for _, w := range snap.Workers {
		slots := w.Slots
		if c := s.workers[w.ID]; c != nil && !fresh && c.drained {
			slots = 0 // Drain took them; the rebuilt scheduler keeps it so
		}
		if !s.sharable(w.Isolation, w.BoundUser) {
			// Registered while the server shared unisolated workers: it
			// gets nothing more until it registers again, which is refused.
			s.log.Warn("worker without isolation and bound to no user gets no work (no --share-unisolated-workers)", "worker", w.ID)
			slots = 0
		}
		s.apply(sched.Event{Kind: sched.EventWorkerUp, Time: seconds(now), Worker: w.ID, Slots: slots, CanSuspend: w.CanSuspend, MemoryMB: w.MemoryMB,
			GPUs: w.GPUs, BoundUser: w.BoundUser, EndsAt: endSeconds(w.EndsAt), Route: w.Route})
		if s.workers[w.ID] == nil || fresh {
			s.workers[w.ID] = newWorkerConn(w.ID, w.Hostname, w.Slots, w.CanSuspend, w.BoundUser, now)
		}
	}
	for _, st := range snap.Sets {
		s.apply(sched.Event{Kind: sched.EventDisclosed, Time: seconds(st.DisclosedAt), Set: st.Set, Owner: st.Owner, Tasks: st.Tasks, MaxRunning: st.MaxRunning,
			After: st.After, Route: st.Route})
	}
	for _, d := range snap.Durations {
		s.apply(sched.Event{Kind: sched.EventDurationObserved, Time: seconds(now), Set: d.Set, Owner: d.Owner, Duration: d.Seconds, Censored: d.Censored})
	}
	for _, c := range snap.Copies {
		if _, err := s.sched.Apply(sched.Event{Kind: sched.EventCopyAttached, Time: seconds(now), Copy: c.ID, Task: c.Task,
			Slot: c.Slot, Speculative: c.Speculative, StartedAt: seconds(c.StartedAt), Suspended: c.State == sched.CopySuspended}); err != nil {
			// The scheduler cannot hold it (its worker is not expected back):
			// the copy is lost and its task runs again.
			s.log.Warn("copy not re-attached at start", "copy", c.ID, "err", err.Error())
		}
	}
	// Dependencies that ended while the server was down release (or
	// cancel) their waiting sets now.
	s.resolveDeps(ctx, now, nil)
	s.refreshStats()
	s.refreshShares()
	s.log.Info("state loaded", "workers", len(snap.Workers), "open_sets", len(snap.Sets), "live_copies", len(snap.Copies), "durations", len(snap.Durations), "first_copy_id", cfg.FirstCopyID)
	return nil
}

// routes builds the HTTP handler: the four services, health, reflection,
// metrics and the web page. The services sit behind authenticate, which
// checks the caller and the request's size before anything reads its body;
// each procedure's messages are read up to its own limit (readLimitTable).
func (s *Server) routes() http.Handler {
	limits := s.readLimitTable()
	services := func(readMax int64) map[string]http.Handler {
		opts := []connect.HandlerOption{
			connect.WithInterceptors(interceptor{s: s}),
			connect.WithRecover(s.recoverPanic),
			connect.WithReadMaxBytes(int(readMax)),
			// Responses under 16 KiB (most of them: a finish report's
			// answer, a watch step, a page of 50 tasks) are sent as they
			// are; larger ones are gzipped at the fastest level. At the
			// default level and size, resetting a compressor for each small
			// watch message was 8% of the server's CPU, and making new
			// ones a tenth of what it allocated.
			connect.WithCompressMinBytes(16 << 10),
			connect.WithCompression("gzip",
				func() connect.Decompressor { return &gzip.Reader{} },
				newKeptCompressor), // see gzipCompressors
		}
		hs := map[string]http.Handler{}
		for _, mount := range []func() (string, http.Handler){
			func() (string, http.Handler) {
				return batchv1connect.NewTaskSetServiceHandler(taskSetHandler{s}, opts...)
			},
			func() (string, http.Handler) {
				return batchv1connect.NewTaskSetControlServiceHandler(controlHandler{s}, opts...)
			},
			func() (string, http.Handler) {
				return batchv1connect.NewWorkerServiceHandler(workerHandler{s}, opts...)
			},
			func() (string, http.Handler) {
				return batchv1connect.NewBillingServiceHandler(billingHandler{s}, opts...)
			},
			func() (string, http.Handler) {
				return batchv1connect.NewClusterServiceHandler(clusterHandler{s}, opts...)
			},
			func() (string, http.Handler) { return batchv1connect.NewUserServiceHandler(userHandler{s}, opts...) },
		} {
			path, h := mount()
			hs[path] = h
		}
		return hs
	}
	api := http.NewServeMux()
	for path, h := range services(SmallRequestBytes) {
		api.Handle(path, h)
	}
	// A procedure with a bigger limit gets handlers of its own, which the
	// mux prefers to its service's (a longer pattern wins).
	byLimit := map[int64]map[string]http.Handler{}
	for proc, l := range limits {
		if byLimit[l.msg] == nil {
			byLimit[l.msg] = services(l.msg)
		}
		service, _, _ := strings.Cut(strings.TrimPrefix(proc, "/"), "/")
		api.Handle(proc, byLimit[l.msg]["/"+service+"/"])
	}
	mux := http.NewServeMux()
	// Health, reflection, /metrics and the page's static assets are open:
	// they tell nothing about anyone's work (the metrics are cluster-wide
	// sums). Every service call needs a token.
	names := []string{
		batchv1connect.TaskSetServiceName, batchv1connect.WorkerServiceName,
		batchv1connect.BillingServiceName, batchv1connect.ClusterServiceName,
		batchv1connect.UserServiceName, batchv1connect.TaskSetControlServiceName,
	}
	for _, name := range names {
		mux.Handle("/"+name+"/", s.authenticate(gzipStreams(holdFlushes(api)), limits))
	}
	mux.Handle(grpchealth.NewHandler(grpchealth.NewStaticChecker(names...)))
	r := grpcreflect.NewStaticReflector(append(names, grpchealth.HealthV1ServiceName)...)
	mux.Handle(grpcreflect.NewHandlerV1(r))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(r))
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.Handle("/", web.Handler())
	return s.guardEnvelopes(mux)
}

// Handler returns the server's HTTP handler (every service, /metrics and
// the page), for tests that serve it with httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Start serves on the listener New opened (Connect, gRPC and gRPC-Web over
// HTTP/1.1 and h2c), or listens on localhost:8080 when Config.Listen was
// empty, and starts the dispatch loop. It returns once the port is open.
func (s *Server) Start() error {
	if s.ln == nil {
		ln, err := net.Listen("tcp", "localhost:8080")
		if err != nil {
			return fmt.Errorf("listen on localhost:8080: %w", err)
		}
		s.ln = ln
	}
	ln := s.ln
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true) // h2c: gRPC clients without TLS
	// HTTP/2 pings notice a dead worker connection within 2/5 of a lease
	// (as the worker's side does), so its stream ends with it.
	_, _, ping := wire.LeaseTiming(s.cfg.Lease)
	s.httpSrv = &http.Server{Handler: s.handler, Protocols: &p, ReadHeaderTimeout: 5 * time.Second,
		HTTP2:    &http.HTTP2Config{SendPingTimeout: ping, PingTimeout: ping},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.StartLoop()
	if s.procs != nil {
		s.served.Add(1)
		go func() {
			defer s.served.Done()
			s.procs.run(s.done)
		}()
	}
	s.served.Add(2)
	go func() {
		defer s.served.Done()
		s.trimMemory()
	}()
	go func() {
		defer s.served.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err.Error())
		}
	}()
	s.log.Info("listening", "url", s.URL())
	return nil
}

// StartLoop starts the dispatch loop alone (Start does it too): every
// TickInterval it runs DispatchOnce.
func (s *Server) StartLoop() {
	if s.loopDone != nil || s.cfg.TickInterval < 0 {
		return
	}
	s.loopDone = make(chan struct{})
	s.startHistory()
	go func() {
		defer close(s.loopDone)
		t := time.NewTicker(s.cfg.TickInterval)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.DispatchOnce()
			}
		}
	}()
}

// URL is the base URL the server listens on ("" before it listens).
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Addr is the address the server listens on (nil before it listens).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close ends streams, stops the listener (waiting up to 5 s for calls in
// flight), stops the dispatch loop and the memory trimmer, waits for them
// and for the listener's goroutine, closes the store and releases the data
// directory.
func (s *Server) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.closeMu.Unlock()
	var err error
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.httpSrv.Shutdown(ctx)
		cancel()
		if err != nil {
			s.httpSrv.Close()
		}
	} else if s.ln != nil {
		s.ln.Close() // New listened, Start never served
	}
	if s.loopDone != nil {
		<-s.loopDone
	}
	s.served.Wait() // trimMemory reads the store's checkpoint stats
	s.mu.Lock()
	defer s.mu.Unlock()
	err = errors.Join(err, s.db.Close())
	// The lock goes last, after the database is closed, so the next server
	// on this directory finds it quiet.
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

// DB returns the server's store (for tests and tools in this module).
func (s *Server) DB() *store.DB { return s.db }

// LeaseSeconds is the worker lease in seconds.
func (s *Server) LeaseSeconds() float64 { return s.cfg.Lease.Seconds() }

// statsSnapshot returns the scheduler stats copied after the last change.
func (s *Server) statsSnapshot() sched.Stats {
	s.statsMu.RLock()
	defer s.statsMu.RUnlock()
	return s.stats
}

// refreshStats copies the scheduler's stats for readers and accounts the
// load up to now. Call with mu held, after every change.
func (s *Server) refreshStats() {
	st := s.sched.Stats()
	s.statsMu.Lock()
	s.stats = st
	s.statsMu.Unlock()
	if s.metrics != nil {
		s.metrics.account(s.now(), st)
	}
}
