package sched

import (
	"math"
	"slices"
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
	lost        bool   // its last copy was lost with a worker; cleared when a copy runs
	cpus        uint16 // slots of one worker a copy takes (0 = 1)
	memMB       uint32 // memory a copy needs on its worker, MiB (0 = none asked)
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
	dpos int      // position in Scheduler.dsets; -1 when not there

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
}

// worker is one worker and its slots.
type worker struct {
	id         WorkerID
	slots      int32
	canSuspend bool
	busy       []*liveCopy // by slot number; nil = free
	freeSlots  int32Heap
	hpos       int
	suspended  []*liveCopy
	memMB      int64 // memory it advertises, MiB (0 = none: memory requests never match)
	memUsed    int64 // memory its running copies asked for
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
	workers   map[WorkerID]*worker
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
	jit       jobIter
	scratch   []*set
	alloc     []int
	specCands []specCand
	reserve   int // free slots Hopper keeps for requested jobs in this Decide
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
	case SpecHopperGRASS, SpecGRASS, SpecBestEffortLATE, SpecBudgeted, SpecNone:
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
	if math.IsNaN(cfg.Epsilon) || math.IsNaN(cfg.BetaPrior) || math.IsNaN(cfg.StragglerAfter) {
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
	}
}

// reqClass reports whether t belongs to the requested class (Hopper's jobs).
func (s *Scheduler) reqClass(t *task) bool {
	return t.state == stRequested || (s.oneQueue && t.state == stDisclosed)
}

func (s *Scheduler) taskLess(a, b *task) bool {
	if s.srpt && a.est != b.est {
		return a.est < b.est
	}
	return a.index < b.index
}

func discLess(a, b *task) bool { return a.index < b.index }

// task returns task i of the set, nil when the scheduler does not hold it.
func (st *set) task(i int32) *task {
	if i < st.lo || int64(i-st.lo) >= int64(len(st.tasks)) {
		return nil
	}
	return st.tasks[i-st.lo]
}

// forgetIfClosed drops set st once it holds no open task and no live
// copy: finished work costs the scheduler no memory, the same state a
// restart gives (store.LoadState reads open tasks only). Events about its
// final tasks are not sent (the store changes nothing for them); a later
// disclose into it makes it anew.
func (s *Scheduler) forgetIfClosed(st *set) {
	if st.open > 0 || st.nrun > 0 || st.nsusp > 0 || st.dpos >= 0 || st.inTree || st.upos >= 0 || st.keyDirty || len(st.running) > 0 {
		return
	}
	if s.sets[st.id] == st {
		delete(s.sets, st.id)
	}
}

func (s *Scheduler) newSet(id SetID, owner string, at Time) *set {
	st := &set{id: id, owner: owner, disclosedAt: at, dpos: -1, upos: -1}
	st.dq.less = discLess
	st.rq.less = s.taskLess
	s.sets[id] = st
	return st
}

func taskWork(t *task) float64 {
	if t.est > 0 {
		return t.est
	}
	return 1
}

// jobKey is the order of jobs in the requested class.
func (s *Scheduler) jobKey(st *set) float64 {
	if s.taskKeys {
		return taskKey(st)
	}
	if s.srpt {
		return st.work
	}
	return st.arrival
}

// joinJob counts t in its set's requested-class job.
func (s *Scheduler) joinJob(t *task, now Time) {
	st := t.set
	if st.unfin == 0 {
		st.arrival = now
	}
	s.countJob(st, -1)
	st.unfin += t.slots()
	s.countJob(st, 1)
	s.reqUnfin += t.slots()
	st.work += taskWork(t)
	for _, c := range t.copies {
		if c.state == cRunning {
			st.held += c.slots()
		}
	}
	s.rekeyJob(st)
}

// leaveJob removes t from its set's requested-class job.
func (s *Scheduler) leaveJob(t *task) {
	st := t.set
	s.countJob(st, -1)
	st.unfin -= t.slots()
	s.countJob(st, 1)
	s.reqUnfin -= t.slots()
	st.work -= taskWork(t)
	if st.unfin == 0 {
		st.work = 0
	}
	for _, c := range t.copies {
		if c.state == cRunning {
			st.held -= c.slots()
		}
	}
	s.rekeyJob(st)
}

func (s *Scheduler) rekeyJob(st *set) {
	defer s.updateUnder(st)
	if st.unfin == 0 {
		s.jobs.remove(st)
		return
	}
	k := s.jobKey(st)
	if !st.inTree {
		st.jkey = k
		s.jobs.insert(st)
		return
	}
	s.jobs.rekey(st, k)
}

// floorCap bounds the fairness floors counted incrementally: a larger
// floor means fewer than (1−ε)·slots/floorCap jobs, cheap to visit.
const floorCap = 64

// countJob adds d to the count of jobs with st's remaining task count.
func (s *Scheduler) countJob(st *set, d int) {
	if st.unfin > 0 {
		s.tcount[min(st.unfin, floorCap)] += d
	}
}

// updateUnder keeps st's membership of s.under: a job with queued tasks
// holding fewer slots than its floor min(underFair, remaining tasks).
func (s *Scheduler) updateUnder(st *set) {
	want := s.underFair > 0 && st.inTree && st.rq.len() > 0 && st.held < min(s.underFair, st.unfin)
	if want == (st.upos >= 0) {
		return
	}
	if want {
		st.upos = len(s.under)
		s.under = append(s.under, st)
		return
	}
	i, last := st.upos, len(s.under)-1
	s.under[i] = s.under[last]
	s.under[i].upos = i
	s.under[last] = nil
	s.under = s.under[:last]
	st.upos = -1
}

// enqueue puts a task without live copies in its class's queue.
func (s *Scheduler) enqueue(t *task) {
	if t.qpos >= 0 || t.done() || len(t.copies) > 0 {
		return
	}
	st := t.set
	if s.reqClass(t) {
		st.rq.push(t)
		s.queuedReq++
		s.updateUnder(st)
		s.markKey(st)
		return
	}
	st.dq.push(t)
	s.queuedDisc++
	if st.dq.len() == 1 {
		s.discJobs++
	}
	s.syncDisclosed(st)
}

// dequeue takes a task out of whichever queue holds it.
func (s *Scheduler) dequeue(t *task) {
	if t.qpos < 0 {
		return
	}
	st := t.set
	if pos := int(t.qpos); pos < st.rq.len() && st.rq.items[pos] == t {
		st.rq.remove(t)
		s.queuedReq--
		s.updateUnder(st)
		s.markKey(st)
		return
	}
	st.dq.remove(t)
	s.queuedDisc--
	if st.dq.len() == 0 {
		s.discJobs--
	}
	s.syncDisclosed(st)
}

// addRunning records that t has a running copy.
func (s *Scheduler) addRunning(t *task) {
	if t.rpos >= 0 {
		return
	}
	st := t.set
	t.rpos = int32(len(st.running))
	st.running = append(st.running, t)
}

func (s *Scheduler) dropRunning(t *task) {
	if t.rpos < 0 || t.running() > 0 {
		return
	}
	st := t.set
	i := int(t.rpos)
	last := len(st.running) - 1
	st.running[i] = st.running[last]
	st.running[i].rpos = int32(i)
	st.running[last] = nil
	st.running = st.running[:last]
	t.rpos = -1
}

// takeSlot puts c on slot of w (which must be free) as a running copy.
func (s *Scheduler) takeSlot(c *liveCopy, w *worker, slot int32) {
	w.busy[slot] = c
	s.freeN--
	s.touch(c.task)
	c.worker, c.slot, c.state = w, slot, cRunning
	c.task.lost = false
	c.task.set.lastStart = max(c.task.set.lastStart, c.started)
	s.takeExtra(c, w)
	s.wheap.fix(w.hpos)
	s.busy += c.slots()
	s.running++
	t := c.task
	t.set.nrun++
	s.syncDisclosed(t.set)
	if s.reqClass(t) {
		t.set.held += c.slots()
		s.updateUnder(t.set)
	} else if !t.done() {
		s.preempt.push(c)
	}
	s.addRunning(t)
}

// freeSlot gives back the slot of running copy c.
func (s *Scheduler) freeSlot(c *liveCopy) {
	w := c.worker
	if c.state != cRunning || w == nil {
		return
	}
	n := c.slots()
	s.releaseSlot(w, c, c.slot)
	if c.nextra > 0 {
		for x := range w.busy {
			if w.busy[x] == c {
				s.releaseSlot(w, c, int32(x))
			}
		}
		c.nextra = 0
	}
	if w.hpos >= 0 {
		s.wheap.fix(w.hpos)
	}
	s.busy -= n
	s.running--
	t := c.task
	t.set.nrun--
	s.syncDisclosed(t.set)
	if s.reqClass(t) {
		t.set.held -= n
		s.updateUnder(t.set)
	}
	s.preempt.remove(c)
	c.state = cSuspended // provisional: the caller sets the real outcome
	s.dropRunning(t)
	s.touch(t)
}

// endCopy removes live copy c for good (killed, lost, finished).
func (s *Scheduler) endCopy(c *liveCopy) {
	if c.state == cRunning {
		s.freeSlot(c)
	} else {
		s.suspended--
		c.task.set.nsusp--
		removeCopy(&c.worker.suspended, c)
	}
	if c.spec {
		s.specLive--
	}
	// A suspended copy keeps its memory; it is given back only here.
	c.worker.memUsed -= int64(c.task.memMB)
	removeCopy(&c.task.copies, c)
	delete(s.copies, c.id)
	c.state = 255
}

func removeCopy(cs *[]*liveCopy, c *liveCopy) {
	a := *cs
	for i, x := range a {
		if x == c {
			copy(a[i:], a[i+1:])
			a[len(a)-1] = nil
			*cs = a[:len(a)-1]
			return
		}
	}
}

// killCopies ends every live copy of t and queues Kill decisions.
func (s *Scheduler) killCopies(t *task, reason string) {
	for len(t.copies) > 0 {
		c := t.copies[0]
		s.pending = append(s.pending, Decision{Kind: DecisionKill, Copy: c.id, Task: t.ref(), Slot: SlotRef{Worker: c.worker.id, Slot: c.slot}, Speculative: c.spec, Reason: reason})
		s.endCopy(c)
	}
}

// setState moves t to state ns, keeping queues, jobs and counters right.
func (s *Scheduler) setState(t *task, ns uint8, now Time) {
	defer s.touch(t)
	if wasFinal := t.final(); wasFinal != (ns == stFinished || ns == stCanceled) {
		if wasFinal {
			t.set.open++
		} else {
			t.set.open--
			defer s.forgetIfClosed(t.set)
		}
	}
	wasReq := s.reqClass(t)
	s.dequeue(t)
	if wasReq && !t.done() {
		s.leaveJob(t)
	}
	if !wasReq && !t.done() {
		for _, c := range t.copies {
			if c.state == cRunning {
				s.preempt.remove(c)
			}
		}
	}
	t.state = ns
	if t.done() {
		return
	}
	if s.reqClass(t) {
		s.joinJob(t, now)
	} else {
		for _, c := range t.copies {
			if c.state == cRunning {
				s.preempt.push(c)
			}
		}
	}
	s.enqueue(t)
}

// observe adds a winning copy's duration to the history of its set (when
// known), its owner, everything, and β.
func (s *Scheduler) observe(st *set, owner string, dur float64, staleScans bool) {
	if st != nil {
		st.durSum += dur
		st.durN++
		if staleScans {
			// t_new of the set's tasks without an estimate moved: cached
			// speculation scans of the set are stale.
			for i := range st.spec {
				st.spec[i].at = math.Inf(-1)
			}
		}
	}
	o := s.owners[owner]
	if o == nil {
		o = &ownerStats{}
		s.owners[owner] = o
	}
	o.sum += dur
	o.n++
	s.global.sum += dur
	s.global.n++
	s.beta.add(dur)
}

// Apply records one event. It returns an error only for a malformed event
// (unknown set or task, bad field); events about copies the scheduler no
// longer holds are accepted and ignored, because drivers race.
func (s *Scheduler) Apply(ev Event) (ApplyResult, error) {
	if math.IsNaN(ev.Time) || math.IsInf(ev.Time, 0) {
		return ApplyResult{}, Errorf(EINVALID, "event time %v is not a number", ev.Time)
	}
	switch ev.Kind {
	case EventWorkerUp:
		return ApplyResult{}, s.workerUp(ev)
	case EventWorkerDown:
		return ApplyResult{}, s.workerDown(ev)
	case EventDisclosed:
		return ApplyResult{}, s.disclosed(ev)
	case EventRequested:
		return s.requested(ev)
	case EventCanceled:
		return ApplyResult{}, s.canceled(ev)
	case EventCopyAttached:
		return ApplyResult{}, s.attached(ev)
	case EventCopyProgress:
		if c := s.copies[ev.Copy]; c != nil {
			if ev.Progress >= 0 && ev.Progress <= 1 {
				c.progress = ev.Progress
			} else {
				c.progress = -1
			}
			s.touch(c.task)
		}
		return ApplyResult{}, nil
	case EventCopyFinished:
		return s.finished(ev)
	case EventCopyLost:
		if c := s.copies[ev.Copy]; c != nil {
			s.lose(c)
		}
		return ApplyResult{}, nil
	case EventLateResult:
		return s.lateResult(ev)
	case EventDurationObserved:
		if !(ev.Duration >= 0) || math.IsInf(ev.Duration, 0) {
			return ApplyResult{}, Errorf(EINVALID, "duration %v is not a number of seconds", ev.Duration)
		}
		owner := ev.Owner
		st := s.sets[ev.Set]
		if st != nil {
			owner = st.owner
		}
		if ev.Censored {
			s.beta.addCensored(ev.Duration)
			return ApplyResult{}, nil
		}
		s.observe(st, owner, ev.Duration, true)
		return ApplyResult{}, nil
	}
	return ApplyResult{}, Errorf(EINVALID, "unknown event kind %d", ev.Kind)
}

func (s *Scheduler) workerUp(ev Event) error {
	if ev.Worker == "" {
		return Errorf(EINVALID, "worker without an id")
	}
	if ev.Slots < 0 || ev.Slots > 1<<20 {
		return Errorf(EINVALID, "worker %s: %d slots", ev.Worker, ev.Slots)
	}
	w := s.workers[ev.Worker]
	if w == nil {
		w = &worker{id: ev.Worker, hpos: -1}
		s.workers[ev.Worker] = w
		s.wheap.push(w)
	}
	w.canSuspend = ev.CanSuspend
	if ev.MemoryMB < 0 {
		return Errorf(EINVALID, "worker %s: %d MiB of memory", ev.Worker, ev.MemoryMB)
	}
	w.memMB = ev.MemoryMB
	old := w.slots
	w.slots = ev.Slots
	for int32(len(w.busy)) < w.slots {
		w.busy = append(w.busy, nil)
	}
	s.slots += int(w.slots) - int(old)
	s.freeN -= w.free()
	w.freeSlots = w.freeSlots[:0]
	for i := int32(0); i < w.slots; i++ {
		if w.busy[i] == nil {
			w.freeSlots.push(i)
		}
	}
	s.freeN += w.free()
	s.wheap.fix(w.hpos)
	return nil
}

func (s *Scheduler) workerDown(ev Event) error {
	w := s.workers[ev.Worker]
	if w == nil {
		return nil
	}
	var live []*liveCopy
	for _, c := range w.busy {
		if c != nil {
			live = append(live, c)
		}
	}
	live = append(live, w.suspended...)
	slices.SortFunc(live, func(a, b *liveCopy) int { return cmpCopyID(a.id, b.id) })
	live = slices.Compact(live) // a copy on several slots appears once a slot
	for _, c := range live {
		s.lose(c)
	}
	s.slots -= int(w.slots)
	s.freeN -= w.free()
	s.wheap.remove(w)
	delete(s.workers, w.id)
	return nil
}

func cmpCopyID(a, b CopyID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lose ends c without a result; its task queues again if nothing else runs it.
func (s *Scheduler) lose(c *liveCopy) {
	t := c.task
	s.endCopy(c)
	if len(t.copies) == 0 {
		t.lost = !t.done()
		s.enqueue(t)
	}
}

const maxIndexGap = 1 << 20

func (s *Scheduler) disclosed(ev Event) error {
	st := s.sets[ev.Set]
	if len(ev.Tasks) == 0 && st != nil {
		if ev.MaxRunning > 0 {
			s.setMaxRunning(st, ev.MaxRunning)
		}
		return nil
	}
	// Validate everything before changing anything.
	lo, top := math.MaxInt32, -1
	for _, ti := range ev.Tasks {
		if ti.Index < 0 {
			return Errorf(EINVALID, "set %d: task index %d out of range", ev.Set, ti.Index)
		}
		lo, top = min(lo, int(ti.Index)), max(top, int(ti.Index))
	}
	// The tasks slice spans the indexes held, holes included: bound the
	// holes.
	held, first := 0, lo
	if st != nil && len(st.tasks) > 0 {
		held, first = len(st.tasks), min(lo, int(st.lo))
	}
	if span := max(top+1, first+held) - first; span > held+len(ev.Tasks)+maxIndexGap {
		return Errorf(EINVALID, "set %d: task indexes %d to %d leave more than %d unused indexes among the %d held", ev.Set, lo, top, maxIndexGap, held)
	}
	seen := make([]uint64, (top-lo)/64+1) // a bit per index from lo to top
	for _, ti := range ev.Tasks {
		i := int(ti.Index) - lo
		w, bit := i/64, uint64(1)<<(i%64)
		if seen[w]&bit != 0 || (st != nil && st.task(ti.Index) != nil) {
			return Errorf(ECONFLICT, "set %d: task %d disclosed twice", ev.Set, ti.Index)
		}
		seen[w] |= bit
		if _, ok := fromTaskState(ti.State); !ok {
			return Errorf(EINVALID, "set %d task %d: unknown state %q", ev.Set, ti.Index, ti.State)
		}
		if ti.Cpus < 0 || ti.Cpus > MaxCpus || ti.MemoryMB < 0 || ti.MemoryMB > MaxMemoryMB {
			return Errorf(EINVALID, "set %d task %d: %d cpus and %d MiB (at most %d and %d)", ev.Set, ti.Index, ti.Cpus, ti.MemoryMB, MaxCpus, MaxMemoryMB)
		}
		if ti.EstimateSeconds < 0 || math.IsNaN(ti.EstimateSeconds) || math.IsInf(ti.EstimateSeconds, 0) || ti.DeadlineSeconds < 0 || math.IsNaN(ti.DeadlineSeconds) {
			return Errorf(EINVALID, "set %d task %d: bad estimate or deadline", ev.Set, ti.Index)
		}
	}
	if ev.MaxRunning < 0 {
		return Errorf(EINVALID, "set %d: max running %d is negative", ev.Set, ev.MaxRunning)
	}
	if st == nil {
		st = s.newSet(ev.Set, ev.Owner, ev.Time)
	}
	if ev.MaxRunning > 0 {
		s.setMaxRunning(st, ev.MaxRunning)
	}
	if len(st.tasks) == 0 {
		st.lo = int32(lo)
	} else if int32(lo) < st.lo {
		// Indexes below the first held (an append after the set was
		// forgotten, or an out-of-order disclose): move the tasks up.
		grown := make([]*task, int(st.lo)-lo+len(st.tasks), int(st.lo)-lo+max(len(st.tasks), top+1-int(st.lo)))
		copy(grown[int(st.lo)-lo:], st.tasks)
		st.tasks, st.lo = grown, int32(lo)
	}
	if n := top + 1 - int(st.lo); n > len(st.tasks) {
		st.tasks = slices.Grow(st.tasks, n-len(st.tasks))
	}
	// The event's tasks in one allocation: no per-task allocator overhead
	// or size-class rounding.
	slab := make([]task, len(ev.Tasks))
	for i, ti := range ev.Tasks {
		for int(ti.Index-st.lo) >= len(st.tasks) {
			st.tasks = append(st.tasks, nil)
		}
		stt, _ := fromTaskState(ti.State)
		t := &slab[i]
		*t = task{set: st, index: ti.Index, est: ti.EstimateSeconds, deadline: ti.DeadlineSeconds, noSpec: ti.NoSpeculation, qpos: -1, rpos: -1, state: stDisclosed,
			cpus: uint16(ti.Cpus), memMB: uint32(ti.MemoryMB)}
		st.tasks[ti.Index-st.lo] = t
		if !t.final() {
			st.open++
		}
		if stt == stRequested {
			t.requestedAt = ti.RequestedAt
			t.state = stRequested
		} else {
			t.state = stt
		}
		if s.reqClass(t) {
			at := ev.Time
			if t.state == stRequested && ti.RequestedAt != 0 {
				at = ti.RequestedAt
			}
			s.joinJob(t, at)
		}
		s.enqueue(t)
	}
	return nil
}

func (s *Scheduler) lookupTasks(ev Event, what string) (*set, []*task, error) {
	st := s.sets[ev.Set]
	if st == nil {
		return nil, nil, Errorf(ENOTFOUND, "%s: task set %d not found", what, ev.Set)
	}
	if ev.Indexes == nil {
		return st, nil, nil
	}
	ts := make([]*task, 0, len(ev.Indexes))
	for _, i := range ev.Indexes {
		t := st.task(i)
		if t == nil {
			return nil, nil, Errorf(ENOTFOUND, "%s: task %d of set %d not found", what, i, ev.Set)
		}
		ts = append(ts, t)
	}
	return st, ts, nil
}

func (s *Scheduler) requested(ev Event) (ApplyResult, error) {
	st, ts, err := s.lookupTasks(ev, "request")
	if err != nil {
		return ApplyResult{}, err
	}
	if ev.Indexes == nil {
		for _, t := range st.tasks {
			if t != nil && (t.state == stDisclosed || t.state == stExecuted) {
				ts = append(ts, t)
			}
		}
	} else {
		for _, t := range ts {
			if t.state == stCanceled {
				return ApplyResult{}, Errorf(EFAILEDPRECONDITION, "request: task %d of set %d was canceled", t.index, st.id)
			}
		}
	}
	var res ApplyResult
	for _, t := range ts {
		switch t.state {
		case stExecuted:
			t.requestedAt = ev.Time
			s.setState(t, stFinished, ev.Time)
			res.FinishedAtOnce = append(res.FinishedAtOnce, t.ref())
		case stDisclosed:
			t.requestedAt = ev.Time
			// A task whose only copies are suspended competes as queued
			// requested work; the suspended copy resumes if its worker has
			// room, otherwise a new copy replaces it.
			s.setState(t, stRequested, ev.Time)
			if t.running() == 0 && len(t.copies) > 0 && t.qpos < 0 {
				t.set.rq.push(t)
				s.queuedReq++
				s.updateUnder(t.set)
			}
		}
	}
	return res, nil
}

func (s *Scheduler) canceled(ev Event) error {
	st, ts, err := s.lookupTasks(ev, "cancel")
	if err != nil {
		return err
	}
	if ev.Indexes == nil {
		for _, t := range st.tasks {
			if t != nil && (t.state == stDisclosed || t.state == stExecuted) {
				ts = append(ts, t)
			}
		}
	}
	for _, t := range ts {
		if t.final() {
			continue
		}
		s.killCopies(t, "canceled")
		s.setState(t, stCanceled, ev.Time)
	}
	return nil
}

func (s *Scheduler) attached(ev Event) error {
	w := s.workers[ev.Slot.Worker]
	if w == nil {
		return Errorf(ENOTFOUND, "attach copy %d: worker %s not found", ev.Copy, ev.Slot.Worker)
	}
	st := s.sets[ev.Task.Set]
	if st == nil || st.task(ev.Task.Index) == nil {
		return Errorf(ENOTFOUND, "attach copy %d: task %d/%d not found", ev.Copy, ev.Task.Set, ev.Task.Index)
	}
	t := st.task(ev.Task.Index)
	if c := s.copies[ev.Copy]; c != nil {
		if c.task == t && c.worker == w && c.slot == ev.Slot.Slot {
			return nil // the same copy attached again
		}
		return Errorf(ECONFLICT, "attach copy %d: copy id already live elsewhere", ev.Copy)
	}
	if t.done() {
		return Errorf(EFAILEDPRECONDITION, "attach copy %d: task %d/%d needs no run", ev.Copy, st.id, t.index)
	}
	if ev.Copy <= 0 {
		return Errorf(EINVALID, "attach copy: bad copy id %d", ev.Copy)
	}
	c := &liveCopy{id: ev.Copy, task: t, spec: ev.Speculative, ppos: -1, progress: -1, started: ev.StartedAt}
	w.memUsed += int64(t.memMB)
	if ev.Suspended {
		c.worker, c.slot, c.state = w, ev.Slot.Slot, cSuspended
		c.runSoFar = math.Max(0, ev.Time-ev.StartedAt)
		w.suspended = append(w.suspended, c)
		s.suspended++
		st.nsusp++
	} else {
		if ev.Slot.Slot < 0 || ev.Slot.Slot >= w.slots {
			return Errorf(EINVALID, "attach copy %d: worker %s has no slot %d", ev.Copy, w.id, ev.Slot.Slot)
		}
		if o := w.busy[ev.Slot.Slot]; o != nil && o.slot != ev.Slot.Slot {
			// The slot is an extra slot of a copy attached before, which
			// took it for its task's cpus: that copy moves to another.
			s.moveExtra(w, o, ev.Slot.Slot)
		}
		if w.busy[ev.Slot.Slot] != nil {
			return Errorf(ECONFLICT, "attach copy %d: slot %s/%d holds copy %d", ev.Copy, w.id, ev.Slot.Slot, w.busy[ev.Slot.Slot].id)
		}
		w.freeSlots.removeValue(ev.Slot.Slot)
		s.takeSlot(c, w, ev.Slot.Slot)
	}
	s.dequeue(t)
	t.copies = append(t.copies, c)
	s.copies[c.id] = c
	if c.spec {
		s.specLive++
	}
	if ev.Copy >= s.nextCopy {
		s.nextCopy = ev.Copy + 1
	}
	return nil
}

// lateResult makes a lost copy's late result its task's: the task's
// re-runs are killed and it is done.
func (s *Scheduler) lateResult(ev Event) (ApplyResult, error) {
	st := s.sets[ev.Task.Set]
	if st == nil || ev.Task.Index < 0 || int(ev.Task.Index) >= len(st.tasks) || st.tasks[ev.Task.Index] == nil {
		return ApplyResult{}, Errorf(ENOTFOUND, "task %d/%d is not known", ev.Task.Set, ev.Task.Index)
	}
	t := st.tasks[ev.Task.Index]
	if t.done() {
		return ApplyResult{}, nil
	}
	s.killCopies(t, "late-result")
	if t.state == stRequested {
		s.setState(t, stFinished, ev.Time)
	} else {
		s.setState(t, stExecuted, ev.Time)
	}
	return ApplyResult{Won: true}, nil
}

func (s *Scheduler) finished(ev Event) (ApplyResult, error) {
	c := s.copies[ev.Copy]
	if c == nil {
		return ApplyResult{}, nil
	}
	t := c.task
	if t.done() {
		// Cannot happen (the copies of a done task are ended at once), but
		// a result of a task that needs none is never the task's.
		s.endCopy(c)
		return ApplyResult{}, nil
	}
	dur := c.runTime(ev.Time)
	if ev.Duration > 0 && !math.IsInf(ev.Duration, 0) {
		dur = ev.Duration
	}
	s.observe(t.set, t.set.owner, dur, t.est == 0)
	if c.spec {
		s.specWon++
	}
	s.endCopy(c)
	for _, o := range t.copies {
		// The losers ran at least this long: censored samples for β.
		s.beta.addCensored(o.runTime(ev.Time))
	}
	s.killCopies(t, "lost-race")
	if t.state == stRequested {
		s.setState(t, stFinished, ev.Time)
	} else {
		s.setState(t, stExecuted, ev.Time)
	}
	return ApplyResult{Won: true}, nil
}
