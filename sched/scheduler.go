package sched

import (
	"math"
)

// task states inside the scheduler (the exported TaskState strings cost 16
// bytes a task; a million queued tasks make that count).
const (
	stDisclosed uint8 = iota
	stExecuted
	stRequested
	stFinished
	stCanceled
)

func toTaskState(s uint8) TaskState {
	return [...]TaskState{TaskDisclosed, TaskExecuted, TaskRequested, TaskFinished, TaskCanceled}[s]
}

func fromTaskState(s TaskState) (uint8, bool) {
	switch s {
	case "", TaskDisclosed:
		return stDisclosed, true
	case TaskExecuted:
		return stExecuted, true
	case TaskRequested:
		return stRequested, true
	case TaskFinished:
		return stFinished, true
	case TaskCanceled:
		return stCanceled, true
	}
	return 0, false
}

// task is one task as the scheduler sees it. Kept small: a queued task costs
// this struct plus one pointer in its set and one in a queue.
type task struct {
	set         *set
	copies      []*liveCopy // live copies (running or suspended)
	est         float64     // EstimateSeconds, 0 = unknown
	deadline    float64
	requestedAt Time
	index       int32
	qpos        int32 // position in set.dq or set.rq; -1 when not queued
	rpos        int32 // position in set.running; -1 when no running copy
	state       uint8
	noSpec      bool
	held        bool   // held (hold.go): in neither class, starts no copy
	lost        bool   // its last copy was lost with a worker; cleared when a copy runs
	cpus        uint16 // slots of one worker a copy takes (0 = 1)
	memMB       uint32 // memory a copy needs on its worker, MiB (0 = none asked)
	gpus        uint8  // GPUs a copy takes on its worker (0 = none; gpu.go)
}

func (t *task) ref() TaskRef { return TaskRef{Set: t.set.id, Index: t.index} }

func (t *task) final() bool { return t.state == stFinished || t.state == stCanceled }

// done reports whether the task needs no more runs.
func (t *task) done() bool { return t.state != stDisclosed && t.state != stRequested }

func (t *task) running() int {
	n := 0
	for _, c := range t.copies {
		if c.state == cRunning {
			n++
		}
	}
	return n
}

// copy states inside the scheduler.
const (
	cRunning uint8 = iota
	cSuspended
)

// liveCopy is one live run of a task.
type liveCopy struct {
	id     CopyID
	task   *task
	worker *worker
	slot   int32
	ppos   int32 // position in Scheduler.preempt; -1 when not there
	spec   bool
	state  uint8
	// nextra counts the further slots of its worker a copy of a task that
	// takes several holds (worker.busy marks them; resource.go). Kept in
	// the padding, so that a copy stays 64 bytes.
	nextra   uint16
	started  Time    // when it (last) took a slot
	runSoFar float64 // run time before its last suspension
	progress float64 // -1 when none reported
}

// runTime is how long the copy has held a slot by now, suspension excluded.
func (c *liveCopy) runTime(now Time) float64 {
	if c.state != cRunning {
		return c.runSoFar
	}
	return c.runSoFar + math.Max(0, now-c.started)
}

// set is a task set; it is also the job of its requested class.
type set struct {
	id          SetID
	owner       string
	disclosedAt Time
	tasks       []*task // task lo+i at i; nil holes for indexes never disclosed
	lo          int32   // index of tasks[0]
	// open counts the tasks not final (disclosed, requested, executed). A
	// set with none and no live copy is forgotten (forgetIfClosed), as a
	// restart forgets it: the scheduler holds open work only.
	open int32

	dq   taskHeap // queued tasks of the disclosed class, by index
	dpos int32    // position in Scheduler.dsets; -1 when not there

	// The requested class (Hopper's job).
	rq      taskHeap // queued tasks of the requested class
	unfin   int      // unfinished tasks of the requested class
	work    float64  // their estimated work (unknown estimate = 1)
	held    int      // slots held by running copies of requested-class tasks
	arrival Time     // when the job last became non-empty (FCFS key)

	jkey   float64
	jprio  uint64
	jleft  *set
	jright *set
	inTree bool

	running []*task // tasks with a running copy (either class)
	marked  bool    // scratch flag for one pass of Decide

	// spec caches speculation scans: under rule key (class, RAS or GS,
	// copy bound), no running task of the set qualifies before at, as long
	// as β is not refitted (epoch). Events lower at to the touched task's
	// own eligibility time (touch). Two rules are kept, the last used.
	spec [2]specCache

	// lastStart is when a copy of the set last started or resumed: its
	// unused Hopper share is held for speculation only until lastStart +
	// StragglerAfter (see holdShare).
	lastStart Time

	keyDirty bool // PolicyBatchSRPTTask: in Scheduler.dirtyKeys

	upos    int  // position in Scheduler.under; -1 when not there
	visited bool // scratch flag for one pass of Decide

	// maxRun caps the set's running copies, speculative ones included
	// (--max-running; 0 = no cap); nrun counts them. A set at its cap
	// leaves Scheduler.dsets, so that it blocks no other set (cap.go).
	maxRun int32
	nrun   int32
	nsusp  int32 // suspended copies of the set (they resume first)

	// Finished-copy durations for t_new.
	durSum float64
	durN   int

	// Fair share (fairshare.go): the owner's record, the held slots and
	// queued tasks last counted into it, and the position+1 in its jobs'
	// heap (0: not there; -1: out for the rest of a fairFill).
	fsUser           *fsUser
	fsHeld, fsQueued int
	fpos             int

	// route is where the set's copies may run (route.go; zero: anywhere).
	route Route
}

// worker is one worker and its slots.
type worker struct {
	id         WorkerID
	slots      int32
	canSuspend bool
	busy       []*liveCopy // by slot number; nil = free
	freeSlots  int32Heap
	hpos       int32 // position in Scheduler.wheap
	suspended  []*liveCopy
	memMB      int64  // memory it advertises, MiB (0 = none: memory requests never match)
	memUsed    int64  // memory its running copies asked for
	gpus       int32  // GPUs it offers (0 = none: GPU requests never match; gpu.go)
	gpuUsed    int32  // GPUs its copies hold, suspended ones too
	bound      string // the one owner whose tasks it runs ("": anyone's; isolation.go)
	// endsAt is when it stops taking copies (0: never), and clock the
	// scheduler whose now and estimates timeFits reads (set with endsAt;
	// workerend.go).
	endsAt Time
	clock  *Scheduler
	// route is the worker's pool and partition (route.go).
	route Route
}

func (w *worker) free() int { return len(w.freeSlots) }

type ownerStats struct {
	sum float64
	n   int
}

// Scheduler decides which copies run where. It is not safe for concurrent
// use: the driver serializes Apply, Decide and Stats.
type Scheduler struct {
	cfg       Config
	oneQueue  bool // batch-*: disclosure counts as request
	noDisc    bool // interactive-*: disclosed work never runs
	srpt      bool
	taskKeys  bool   // batch-srpt-task: a job's key is its smallest queued task
	dirtyKeys []*set // jobs whose task key may have changed (flushKeys)
	epsilon   float64
	sets      map[SetID]*set
	waiting   map[SetID]*waitingSet // sets waiting for dependencies (depend.go)
	waitOn    map[SetID]int         // waiting sets per set they wait on
	workers   map[WorkerID]*worker
	nbound    int // workers bound to one owner (isolation.go)
	nends     int // workers with an end time (workerend.go)
	// now is the latest time Decide, Why or an event was given: what a
	// worker's end is checked against.
	now       Time
	wheap     workerHeap
	copies    map[CopyID]*liveCopy
	nextCopy  CopyID
	pending   []Decision
	jobs      jobTree
	dsets     setHeap
	preempt   copyHeap
	owners    map[string]*ownerStats
	global    ownerStats
	beta      betaEstimator
	lag       lagEstimator // the driver's dispatch and report latency (lag.go)
	jit       jobIter
	scratch   []*set
	holderBuf []int // preemptRequested's scratch
	// victimScans counts the jobs preemptRequested looked at for a
	// victim, for tests that bound its work.
	victimScans int
	alloc       []int
	specCands   []specCand
	rateBuf     []float64 // slowTasks' scratch
	reserve     int       // free slots Hopper keeps for requested jobs in this Decide
	// holdForResources: a requested task waits for room some worker
	// could give it; disclosed work leaves the free slots alone in this
	// Decide (resource.go).
	holdForResources bool
	// aside holds the requested tasks taken out of their queues for the
	// rest of the requested passes of this Decide because no worker has
	// room for their resources, so that the tasks behind them are not held
	// up (resource.go).
	aside []*task

	// For the fairness floor without visiting every job: jobs by remaining
	// task count (capped at floorCap), and the jobs with queued tasks that
	// hold fewer slots than their floor min(underFair, remaining).
	tcount    [floorCap + 1]int
	under     []*set
	underFair int
	fullAlloc bool // tests: always take the O(jobs) allocation path

	// Counters for Stats, kept up to date by every change.
	slots, busy, freeN           int
	queuedReq, queuedDisc        int
	running, suspended, specLive int
	specStarted, specWon         int64
	discJobs                     int
	reqUnfin                     int // Σ unfin over jobs

	fair fairShare // between users in the requested class (fairshare.go)
}

// New returns a scheduler with cfg's policies; zero fields take defaults.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Policy == "" {
		cfg.Policy = PolicySRPTxFCFS
	} else if p, err := ParsePolicy(string(cfg.Policy)); err != nil {
		return nil, err
	} else {
		cfg.Policy = p
	}
	if cfg.Speculation == "" {
		cfg.Speculation = SpecHopperGRASS
	}
	switch cfg.Speculation {
	case SpecHopperGRASS, SpecGRASS, SpecBestEffortLATE, SpecBudgeted, SpecNone, SpecClone:
	default:
		sp, b, err := ParseSpeculation(string(cfg.Speculation))
		if err != nil {
			return nil, err
		}
		cfg.Speculation = sp
		if sp == SpecBudgeted && cfg.Budget == 0 {
			cfg.Budget = b
		}
	}
	if cfg.Budget < 0 {
		return nil, Errorf(EINVALID, "budget %d is negative", cfg.Budget)
	}
	if cfg.Preemption == "" {
		cfg.Preemption = PreemptSuspend
	} else if p, err := ParsePreemption(string(cfg.Preemption)); err != nil {
		return nil, err
	} else {
		cfg.Preemption = p
	}
	if math.IsNaN(cfg.VirtualFactor) || cfg.VirtualFactor < 0 || (cfg.VirtualFactor > 0 && cfg.VirtualFactor < 1) {
		return nil, Errorf(EINVALID, "virtual factor %g must be 0 (Hopper's 2/β) or at least 1", cfg.VirtualFactor)
	}
	if math.IsNaN(cfg.SpecCap) || cfg.SpecCap < 0 || cfg.SpecCap > 1 || math.IsNaN(cfg.SlowTaskQuantile) || cfg.SlowTaskQuantile < 0 || cfg.SlowTaskQuantile > 1 {
		return nil, Errorf(EINVALID, "speculative cap %g and slow-task quantile %g must be in [0, 1]", cfg.SpecCap, cfg.SlowTaskQuantile)
	}
	if math.IsNaN(cfg.Epsilon) || math.IsNaN(cfg.BetaPrior) || math.IsNaN(cfg.StragglerAfter) || math.IsNaN(cfg.FairShareHalfLife) {
		return nil, Errorf(EINVALID, "NaN in scheduler configuration")
	}
	if cfg.Epsilon == 0 {
		cfg.Epsilon = 0.1
	}
	eps := cfg.Epsilon
	if eps < 0 {
		eps = 0
	}
	if cfg.BetaPrior == 0 {
		cfg.BetaPrior = 1.5
	}
	if cfg.BetaPrior <= 1 {
		return nil, Errorf(EINVALID, "beta prior %g must be above 1 (a Pareto tail with a finite mean)", cfg.BetaPrior)
	}
	if cfg.BetaMinSamples == 0 {
		cfg.BetaMinSamples = 20
	}
	if cfg.MaxEarlyCopies == 0 {
		cfg.MaxEarlyCopies = 2
	}
	if cfg.MaxEarlyCopies < 1 {
		return nil, Errorf(EINVALID, "max early copies %d must be at least 1", cfg.MaxEarlyCopies)
	}
	if g, err := ParseGrassMode(string(cfg.Grass)); err != nil {
		return nil, err
	} else {
		cfg.Grass = g
	}
	if cfg.FirstCopyID == 0 {
		cfg.FirstCopyID = 1
	}
	s := &Scheduler{
		cfg:      cfg,
		oneQueue: cfg.Policy == PolicyBatchSRPT || cfg.Policy == PolicyBatchFCFS || cfg.Policy == PolicyBatchSRPTTask,
		taskKeys: cfg.Policy == PolicyBatchSRPTTask,
		noDisc:   cfg.Policy == PolicyInteractiveSRPT || cfg.Policy == PolicyInteractiveFCFS,
		srpt:     cfg.Policy == PolicySRPTxFCFS || cfg.Policy == PolicyBatchSRPT || cfg.Policy == PolicyInteractiveSRPT || cfg.Policy == PolicyBatchSRPTTask,
		epsilon:  eps,
		sets:     make(map[SetID]*set),
		workers:  make(map[WorkerID]*worker),
		copies:   make(map[CopyID]*liveCopy),
		nextCopy: cfg.FirstCopyID,
		owners:   make(map[string]*ownerStats),
	}
	s.wheap.less, s.wheap.at = workerBefore, workerPos
	s.dsets.less, s.dsets.at = setBefore, setPos
	s.preempt.less, s.preempt.at = copyAfter, copyPos
	s.fair.init(cfg)
	s.beta.init(cfg.BetaPrior, cfg.BetaMinSamples)
	// Without speculation β decides nothing: fit it only when read.
	s.beta.lazy = cfg.Speculation == SpecNone
	return s, nil
}

// Config returns the configuration with its defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// Beta returns the current estimate of the Pareto shape of task durations
// (the prior until enough copies have finished).
func (s *Scheduler) Beta() float64 { return s.beta.value() }

// Stats returns counters for metrics in O(1).
func (s *Scheduler) Stats() Stats {
	return Stats{
		Slots:              s.slots,
		BusySlots:          s.busy,
		QueuedRequested:    s.queuedReq,
		QueuedDisclosed:    s.queuedDisc,
		RunningCopies:      s.running,
		SuspendedCopies:    s.suspended,
		SpeculativeCopies:  s.specLive,
		SpeculativeStarted: s.specStarted,
		SpeculativeWon:     s.specWon,
		Beta:               s.beta.value(),
		BetaSamples:        s.beta.n,
		RequestedJobs:      s.jobs.n,
		Disclosed:          s.discJobs,
		Lag:                s.lag.value,
	}
}
