package sim

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"batchd/sched"
)

// copy states, as the simulator sees them.
const (
	cpRunning uint8 = iota + 1
	cpSuspended
	cpEnded
)

// copyRec is one simulated copy. work is the copy's total work (its
// duration when never suspended); done is the work done before the current
// run interval, which began at runStart.
type copyRec struct {
	work, done, runStart float64
	nextProg             float64 // work done at which the next progress report is sent
	set                  int32
	k                    int32 // the copy's number within its task (0 = first)
	index                int32
	slot                 int32 // flat slot index
	gen                  uint32
	state                uint8
}

// taskRec is one simulated task.
type taskRec struct {
	size   float64 // petrou: service time of every copy
	execAt float64 // when a copy won, -1 before
	winRun float64 // slot-seconds of the winning copy
	copies int32   // copies started so far (keys the duration draws)
	group  int32
	reqd   bool
}

// groupRec is one request: a range of a set's tasks requested together (one
// task in petrou, one job in cluster and mixed).
type groupRec struct {
	first, end int32 // task indexes [first, end)
	reqAt      float64
	left       int32 // requested tasks not yet delivered
	maxExec    float64
	maxRun     float64
	requested  bool
	done       bool
}

// setRec is one simulated task set.
type setRec struct {
	user   int32 // -1 for open-loop jobs
	tasks  []taskRec
	groups []groupRec
	next   int32 // next group to request (closed loop)
	arrive float64
	flood  bool // a job of the flooding user (Params.FloodWork)
	// after is the set this one waits for, +1 (0: none); waiters are the
	// sets that wait for this one (Params.ChainProb).
	after   int32
	waiters []int32
}

// userRec is one closed-loop user.
type userRec struct {
	r          rng
	changeProb float64
	setSize    int
	set        int32 // current set, -1 before the first
	owner      string
}

// Run simulates one run of p and returns its measurements. It fails when p
// is invalid or when the scheduler returns an error or a decision that
// breaks the contract (a slot holding two copies, a decision naming an
// unknown copy); such an error is a scheduler bug and says so.
func Run(ctx context.Context, p Params) (Result, error) {
	p = p.withDefaults()
	if err := p.validate(); err != nil {
		return Result{}, err
	}
	cfg := p.Sched
	cfg.Seed = p.Seed
	if cfg.FirstCopyID == 0 {
		cfg.FirstCopyID = 1
	}
	s, err := sched.New(cfg)
	if err != nil {
		return Result{}, err
	}
	m := &sim{p: p, s: s, ctx: ctx, base: cfg.FirstCopyID}
	start := time.Now()
	if err := m.run(); err != nil {
		return Result{}, fmt.Errorf("%s, %s, seed %d, t=%.3f: %w", p, cfg, p.Seed, m.now, err)
	}
	r := m.result()
	r.WallSeconds = time.Since(start).Seconds()
	return r, nil
}

// sim is the state of one run.
type sim struct {
	p    Params
	s    *sched.Scheduler
	ctx  context.Context
	q    eventQueue
	now  float64
	base sched.CopyID

	warm, end, stop float64 // measured window [warm, end]; hard stop

	copies   []copyRec
	sets     []setRec
	users    []userRec
	workers  map[sched.WorkerID]int32 // worker → its first flat slot
	slotCopy []sched.CopyID           // flat slot → live running copy, 0 = free

	durRNGSeed   int64
	arrivals     rng
	failRNG      rng
	arrivalRate  float64
	measuredLeft int // cluster: measured jobs not yet done
	arrivalsDone bool
	batch        bool // a batch policy: the user pays for everything run
	nextDecide   float64
	tickQueued   bool
	// nbusy counts the slots a running copy holds; fullSince is when the
	// last free slot was taken (for Result.FullShare).
	nbusy     int
	fullSince float64
	// wnames are the workers' names as the scheduler knows them
	// (Params.PlacementSeed).
	wnames []sched.WorkerID

	acc accum
	// err is an error of a step that cannot return one (releaseWaiters,
	// from groupDone); the run stops at it.
	err error
}

// accum collects the measurements.
type accum struct {
	events, decisions, applied int64
	requests                   int
	censored                   int
	tasks                      int
	sumV, sumSlow              float64
	busy                       float64
	full                       float64
	billed                     float64
	requestedWork              float64
	jobs                       []JobResult
	unfinished                 int
	unfinishedFlood            int
	lost                       int64
}

func (m *sim) run() error {
	p := &m.p
	m.warm = p.Warmup
	m.end = p.Warmup + p.Duration
	m.stop = m.end
	if p.Workload == WorkloadCluster {
		m.stop = m.end + p.Drain
	}
	m.batch = p.Sched.Policy == sched.PolicyBatchSRPT || p.Sched.Policy == sched.PolicyBatchFCFS || p.Sched.Policy == sched.PolicyBatchSRPTTask
	m.durRNGSeed = p.Seed

	// Workers.
	m.workers = make(map[sched.WorkerID]int32)
	m.slotCopy = make([]sched.CopyID, p.Slots)
	nw := (p.Slots + p.SlotsPerWorker - 1) / p.SlotsPerWorker
	m.wnames = make([]sched.WorkerID, nw)
	for w := range nw {
		m.wnames[w] = workerID(w)
	}
	if p.PlacementSeed != 0 {
		r := newRNG(p.PlacementSeed, 8)
		for i := nw - 1; i > 0; i-- {
			j := r.intn(0, i)
			m.wnames[i], m.wnames[j] = m.wnames[j], m.wnames[i]
		}
	}
	for first, w := 0, 0; first < p.Slots; first, w = first+p.SlotsPerWorker, w+1 {
		n := min(p.SlotsPerWorker, p.Slots-first)
		id := m.wnames[w]
		m.workers[id] = int32(first)
		if err := m.apply(sched.Event{Kind: sched.EventWorkerUp, Time: 0, Worker: id, Slots: int32(n), CanSuspend: true}); err != nil {
			return err
		}
	}

	// Worker failures.
	if p.WorkerMTBF > 0 {
		if p.WorkerRepair <= 0 {
			p.WorkerRepair = 60
		}
		m.failRNG = newRNG(p.Seed, 4)
		for w := 0; w*p.SlotsPerWorker < p.Slots; w++ {
			m.q.push(simEvent{t: m.failRNG.exp(p.WorkerMTBF), kind: evWorkerDown, id: int64(w)})
		}
	}

	// Users or arrivals.
	switch p.Workload {
	case WorkloadPetrou, WorkloadMixed:
		m.users = make([]userRec, p.Users)
		for i := range m.users {
			u := &m.users[i]
			u.r = newRNG(p.Seed, 1, uint64(i))
			u.changeProb = u.r.uniform(0, p.ChangeProbMax)
			u.setSize = u.r.intn(1, p.SetSizeMax)
			u.set = -1
			u.owner = "u" + strconv.Itoa(i)
			m.q.push(simEvent{t: 0, kind: evUser, id: int64(i)})
		}
	case WorkloadCluster:
		m.arrivals = newRNG(p.Seed, 2)
		if p.SingleJob > 0 {
			m.q.push(simEvent{t: 0, kind: evArrival})
			break
		}
		m.arrivalRate = p.ArrivalRate()
		m.q.push(simEvent{t: m.arrivals.exp(1 / m.arrivalRate), kind: evArrival})
	}

	for m.q.len() > 0 {
		t := m.q.peek().t
		if t > m.stop {
			break
		}
		if m.p.Workload == WorkloadCluster && m.arrivalsDone && m.measuredLeft == 0 {
			break
		}
		m.now = t
		for m.q.len() > 0 && m.q.peek().t == t {
			e := m.q.pop()
			m.acc.events++
			if err := m.handle(e); err != nil {
				return err
			}
			if m.err != nil {
				return m.err
			}
		}
		if err := m.maybeDecide(); err != nil {
			return err
		}
		if m.acc.events&0xffff == 0 && m.ctx.Err() != nil {
			return m.ctx.Err()
		}
	}
	// Close the run intervals still open.
	end := math.Min(m.now, m.stop)
	for i := range m.copies {
		c := &m.copies[i]
		if c.state == cpRunning {
			m.acc.busy += m.inWindow(c.runStart, end)
		}
	}
	if m.p.Workload != WorkloadCluster {
		m.censorOpen()
	}
	if m.p.Workload == WorkloadCluster {
		for si := range m.sets {
			st := &m.sets[si]
			if st.arrive >= m.warm && st.arrive <= m.end && !st.groups[0].done {
				m.acc.unfinished++
				if st.flood {
					m.acc.unfinishedFlood++
				}
			}
		}
	}
	return nil
}

// apply hands one event to the scheduler.
func (m *sim) apply(ev sched.Event) error {
	_, err := m.applyR(ev)
	return err
}

func (m *sim) applyR(ev sched.Event) (sched.ApplyResult, error) {
	m.acc.applied++
	r, err := m.s.Apply(ev)
	if err != nil {
		return r, fmt.Errorf("scheduler rejected event kind %d: %w", ev.Kind, err)
	}
	return r, nil
}

func (m *sim) handle(e simEvent) error {
	switch e.kind {
	case evCopyEnd:
		c := m.copyOf(sched.CopyID(e.id))
		if c == nil || c.gen != e.gen || c.state != cpRunning {
			return nil
		}
		return m.copyEnded(sched.CopyID(e.id), c)
	case evProgress:
		c := m.copyOf(sched.CopyID(e.id))
		if c == nil || c.gen != e.gen || c.state != cpRunning {
			return nil
		}
		done := c.done + (m.now - c.runStart)
		prog := math.Min(1, done/c.work)
		if m.p.ProgressNoise > 0 {
			// Keyed by (task, copy number, report): the same noise under
			// every policy (common random numbers).
			r := newRNG(m.durRNGSeed, 5, uint64(c.set), uint64(c.index), uint64(c.k), math.Float64bits(c.nextProg))
			prog = math.Min(0.999, prog*math.Exp(m.p.ProgressNoise*r.normal()))
		}
		if err := m.apply(sched.Event{Kind: sched.EventCopyProgress, Time: m.now, Copy: sched.CopyID(e.id), Progress: prog}); err != nil {
			return err
		}
		m.scheduleProgress(sched.CopyID(e.id), c, done)
		return nil
	case evUser:
		return m.userActs(int32(e.id))
	case evArrival:
		return m.jobArrives()
	case evTick:
		m.tickQueued = false
	case evWorkerDown:
		return m.workerDown(int(e.id))
	case evWorkerUp:
		first := int(e.id) * m.p.SlotsPerWorker
		n := min(m.p.SlotsPerWorker, m.p.Slots-first)
		if err := m.apply(sched.Event{Kind: sched.EventWorkerUp, Time: m.now, Worker: m.wnames[e.id], Slots: int32(n), CanSuspend: true}); err != nil {
			return err
		}
		m.q.push(simEvent{t: m.now + m.failRNG.exp(m.p.WorkerMTBF), kind: evWorkerDown, id: e.id})
	}
	return nil
}

func workerID(w int) sched.WorkerID { return sched.WorkerID("w" + strconv.Itoa(w)) }

// workerDown fails worker w: the scheduler is told, and every live copy on
// it (running or suspended) ends without a result.
func (m *sim) workerDown(w int) error {
	first := int32(w * m.p.SlotsPerWorker)
	end := first + int32(min(m.p.SlotsPerWorker, m.p.Slots-int(first)))
	if err := m.apply(sched.Event{Kind: sched.EventWorkerDown, Time: m.now, Worker: m.wnames[w]}); err != nil {
		return err
	}
	for i := range m.copies {
		c := &m.copies[i]
		if (c.state == cpRunning || c.state == cpSuspended) && c.slot >= first && c.slot < end {
			m.stopRun(c)
			c.state = cpEnded
			m.acc.lost++
		}
	}
	m.q.push(simEvent{t: m.now + m.failRNG.exp(m.p.WorkerRepair), kind: evWorkerUp, id: int64(w)})
	return nil
}

// maybeDecide calls Decide now, or with DecideEvery at the next tick.
func (m *sim) maybeDecide() error {
	if m.p.DecideEvery <= 0 || m.now >= m.nextDecide {
		m.nextDecide = m.now + m.p.DecideEvery
		return m.decide()
	}
	if !m.tickQueued {
		m.tickQueued = true
		m.q.push(simEvent{t: m.nextDecide, kind: evTick})
	}
	return nil
}

func (m *sim) copyOf(id sched.CopyID) *copyRec {
	i := int64(id - m.base)
	if i < 0 || i >= int64(len(m.copies)) {
		return nil
	}
	return &m.copies[i]
}

// inWindow is how much of [a, b] lies inside the measured window.
func (m *sim) inWindow(a, b float64) float64 {
	return math.Max(0, math.Min(b, m.end)-math.Max(a, m.warm))
}

// stopRun ends the copy's current run interval at now.
func (m *sim) stopRun(c *copyRec) {
	if c.state == cpRunning {
		m.acc.busy += m.inWindow(c.runStart, m.now)
		c.done += m.now - c.runStart
		m.slotCopy[c.slot] = 0
		if m.nbusy == m.p.Slots {
			m.acc.full += m.inWindow(m.fullSince, m.now)
		}
		m.nbusy--
	}
	c.gen++
}

func (m *sim) copyEnded(id sched.CopyID, c *copyRec) error {
	m.stopRun(c)
	c.state = cpEnded
	r, err := m.applyR(sched.Event{Kind: sched.EventCopyFinished, Time: m.now, Copy: id})
	if err != nil {
		return err
	}
	if !r.Won {
		return nil
	}
	t := &m.sets[c.set].tasks[c.index]
	if t.execAt >= 0 {
		return fmt.Errorf("scheduler bug: copy %d of task %d/%d won, but an earlier copy already won", id, c.set+1, c.index)
	}
	t.execAt = m.now
	t.winRun = c.done
	if t.reqd {
		m.deliver(c.set, c.index)
	}
	return nil
}

// scheduleProgress queues the copy's next progress report: reports are sent
// when its work done reaches TaskScale·2^k (k = 0, 1, ...), a handful per
// copy however long it straggles.
func (m *sim) scheduleProgress(id sched.CopyID, c *copyRec, done float64) {
	if m.p.NoProgress {
		return
	}
	if k := m.p.ProgressEvery; k > 0 {
		// A heartbeat every k seconds of run time.
		c.nextProg = k * (math.Floor(done/k+1e-6) + 1)
		if c.nextProg < c.work {
			m.q.push(simEvent{t: m.now + (c.nextProg - done), kind: evProgress, id: int64(id), gen: c.gen})
		}
		return
	}
	for c.nextProg <= done {
		if c.nextProg == 0 {
			c.nextProg = m.p.TaskScale
		} else {
			c.nextProg *= 2
		}
	}
	at := m.now + (c.nextProg - done)
	for at <= m.now { // rounding: a report due now has just been sent
		c.nextProg *= 2
		at = m.now + (c.nextProg - done)
	}
	if c.nextProg < c.work {
		m.q.push(simEvent{t: at, kind: evProgress, id: int64(id), gen: c.gen})
	}
}

func (m *sim) decide() error {
	ds := m.s.Decide(m.now)
	m.acc.decisions += int64(len(ds))
	for i := range ds {
		d := &ds[i]
		switch d.Kind {
		case sched.DecisionStart:
			if err := m.start(d); err != nil {
				return err
			}
		case sched.DecisionKill, sched.DecisionSuspend:
			c := m.copyOf(d.Copy)
			if c == nil || c.state == cpEnded || c.state == 0 {
				// A kill can race a finish that the scheduler has not
				// seen as such; an unknown copy is a bug.
				if c == nil || c.state == 0 {
					return fmt.Errorf("scheduler bug: decision %d names unknown copy %d", d.Kind, d.Copy)
				}
				continue
			}
			if d.Kind == sched.DecisionSuspend && c.state == cpSuspended {
				return fmt.Errorf("scheduler bug: suspend of suspended copy %d", d.Copy)
			}
			m.stopRun(c)
			if d.Kind == sched.DecisionKill {
				c.state = cpEnded
			} else {
				c.state = cpSuspended
			}
		case sched.DecisionResume:
			c := m.copyOf(d.Copy)
			if c == nil || c.state != cpSuspended {
				return fmt.Errorf("scheduler bug: resume of copy %d that is not suspended", d.Copy)
			}
			slot, err := m.takeSlot(d.Slot, d.Copy)
			if err != nil {
				return err
			}
			c.slot = slot
			c.state = cpRunning
			c.runStart = m.now
			m.q.push(simEvent{t: m.now + (c.work - c.done), kind: evCopyEnd, id: int64(d.Copy), gen: c.gen})
			m.scheduleProgress(d.Copy, c, c.done)
		default:
			return fmt.Errorf("scheduler bug: unknown decision kind %d", d.Kind)
		}
	}
	return nil
}

// takeSlot marks a slot busy with copy id.
func (m *sim) takeSlot(s sched.SlotRef, id sched.CopyID) (int32, error) {
	first, ok := m.workers[s.Worker]
	if !ok || s.Slot < 0 || int(first)+int(s.Slot) >= len(m.slotCopy) || (int(s.Slot) >= m.p.SlotsPerWorker) {
		return 0, fmt.Errorf("scheduler bug: copy %d placed on unknown slot %s/%d", id, s.Worker, s.Slot)
	}
	i := first + s.Slot
	if o := m.slotCopy[i]; o != 0 {
		return 0, fmt.Errorf("scheduler bug: copy %d placed on slot %s/%d that copy %d holds", id, s.Worker, s.Slot, o)
	}
	m.slotCopy[i] = id
	if m.nbusy++; m.nbusy == m.p.Slots {
		m.fullSince = m.now
	}
	return i, nil
}

func (m *sim) start(d *sched.Decision) error {
	i := int64(d.Copy - m.base)
	if i < int64(len(m.copies)) {
		if i < 0 || m.copies[i].state != 0 {
			return fmt.Errorf("scheduler bug: start reuses copy id %d", d.Copy)
		}
	}
	for int64(len(m.copies)) <= i {
		m.copies = append(m.copies, copyRec{})
	}
	si, ti := int64(d.Task.Set)-1, int64(d.Task.Index)
	if si < 0 || si >= int64(len(m.sets)) || ti < 0 || ti >= int64(len(m.sets[si].tasks)) {
		return fmt.Errorf("scheduler bug: start of unknown task %d/%d", d.Task.Set, d.Task.Index)
	}
	t := &m.sets[si].tasks[ti]
	slot, err := m.takeSlot(d.Slot, d.Copy)
	if err != nil {
		return err
	}
	c := &m.copies[i]
	*c = copyRec{set: int32(si), index: int32(ti), k: t.copies, slot: slot, state: cpRunning, runStart: m.now}
	c.work = m.copyWork(int32(si), int32(ti), t, slot)
	t.copies++
	m.q.push(simEvent{t: m.now + c.work, kind: evCopyEnd, id: int64(d.Copy), gen: c.gen})
	m.scheduleProgress(d.Copy, c, 0)
	return nil
}
