package sim

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"batchd/sched"
)

// Recorded measures the trace tr as it happened, with Replay's definitions: a
// request is the tasks of a set requested at one instant, its response
// runs to its last recorded result (max(0, executed − requested) per task).
// Only Requests, Tasks, MeanVisibleResponse, MeanVisibleSlowdown and
// RequestedWork are set; requests with an unfinished task count in
// Unfinished.
func Recorded(tr *sched.Trace) Result {
	type key struct {
		set int
		at  float64
	}
	type grp struct {
		maxExec, maxRun float64
		left, done      int
	}
	var res Result
	gs := map[key]*grp{}
	var keys []key
	for si := range tr.Sets {
		for _, tk := range tr.Sets[si].Tasks {
			if tk.RequestedAt <= 0 {
				continue
			}
			k := key{si, tk.RequestedAt}
			g := gs[k]
			if g == nil {
				g = &grp{}
				gs[k] = g
				keys = append(keys, k)
			}
			switch {
			case tk.ExecutedAt > 0:
				g.done++
				g.maxExec = math.Max(g.maxExec, tk.ExecutedAt)
				for _, d := range tk.Copies {
					if d > 0 {
						g.maxRun = math.Max(g.maxRun, d)
						res.RequestedWork += d
						break
					}
				}
				res.Tasks++
			case tk.CanceledAt > 0:
			default:
				g.left++
			}
		}
	}
	var sumV, sumS float64
	for _, k := range keys {
		g := gs[k]
		switch {
		case g.left > 0:
			res.Unfinished++
		case g.done > 0:
			v := math.Max(0, g.maxExec-k.at)
			res.Requests++
			sumV += v
			if g.maxRun > 0 {
				sumS += v / g.maxRun
			}
		}
	}
	if res.Requests > 0 {
		res.MeanVisibleResponse = sumV / float64(res.Requests)
		res.MeanVisibleSlowdown = sumS / float64(res.Requests)
	}
	return res
}

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// Seed keys the draws of copies the trace has no run time for.
	Seed int64
	// KeepJobs keeps one JobResult per request.
	KeepJobs bool
	// Latency is added to every copy's run time: the copy holds its slot
	// that much longer and its result comes that much later, as on a live
	// server (Trace.Latency is the recorded figure).
	Latency float64
	// Heartbeats, when not nil, reports progress as a live worker does
	// (replayheartbeat.go), in addition to Trace.ProgressEvery's reports.
	Heartbeats *Heartbeats
	// Latencies, when not empty, replace Latency: each copy draws its
	// own from them (replaylatency.go).
	Latencies []float64
	// LatencyAt, when not nil, replaces both: the latency of a copy
	// started at t (the trace's clock).
	LatencyAt func(t float64) float64
	// Tick, when positive, runs the scheduler as a live server does: on
	// events it acts on and every Tick seconds, not after progress
	// reports alone (replaytick.go).
	Tick float64
	// ReportRunTime makes a copy's end report its run time without its
	// latency, as a live worker's does (replaylatency.go).
	ReportRunTime bool
	// OwnLatency, when not nil, gives copy k of task idx of set its own
	// latency where it has one (ok), before LatencyAt and the others
	// (replaylatency.go).
	OwnLatency func(set sched.SetID, idx int32, k int) (lat float64, ok bool)
	// TaskWork, when not nil, is the run time copy k of a task counts its
	// progress against (a live task's own notion of its length, without
	// its process's start and its latency): a heartbeat then carries the
	// fraction of that the task has run (replayheartbeat.go).
	TaskWork func(set sched.SetID, idx int32, k int) float64
	// OnCopy, when not nil, is told of every copy's end (replaycopies.go).
	OnCopy func(CopyTrace)
	// RequestHeard makes the scheduler hear each request when the live
	// one did (TraceTask.HeardAt), not at its stamp; its visible response
	// still counts from the stamp (replayheard.go).
	RequestHeard bool
	// LagAt, when not nil, pins the scheduler's latency estimate at t
	// (the trace's clock) to what it gives (replaylag.go).
	LagAt func(t float64) float64
	// DecideAtStaleEnds runs the scheduler also where a killed or
	// suspended copy would have ended, as replays did before
	// replaytick.go's stale (an ablation; no live server does).
	DecideAtStaleEnds bool
}

// Replay runs tr under cfg and measures it as Run does: a request is the
// tasks of one set requested at the same instant (a job); its visible
// response is from the request to the last of its results. Every request
// is measured (no warm-up); the window runs from the trace's first
// disclosure to its last event, and the run goes on until the work is done.
//
// A copy's run time: with Trace.CopyDuration, that; else the k-th recorded
// copy's when it ran to its end. A copy the trace has no exact time for
// (killed, lost, or more copies than were recorded) draws one of the
// trace's exact run times at random (seeded by ReplayOptions.Seed, the set,
// the task and k), among those longer than what a killed copy had run: the
// replay assumes copies are independent draws from the run times the
// cluster showed.
func Replay(ctx context.Context, tr *sched.Trace, cfg sched.Config, o ReplayOptions) (Result, error) {
	start := time.Now()
	cfg.Seed = o.Seed
	if cfg.FirstCopyID == 0 {
		cfg.FirstCopyID = 1
	}
	s, err := sched.New(cfg)
	if err != nil {
		return Result{}, err
	}
	r := &replay{tr: tr, s: s, ctx: ctx, o: o, cfg: cfg}
	if err := r.init(); err != nil {
		return Result{}, err
	}
	if err := r.run(); err != nil {
		return Result{}, fmt.Errorf("replay under %s at t=%.3f: %w", cfg, r.now, err)
	}
	res := r.result()
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

type rpEvKind uint8

const (
	rpWorkerUp rpEvKind = iota + 1
	rpWorkerDown
	rpDisclose
	rpRequest
	rpCancel
	rpCopyEnd
	rpProgress
	rpHeartbeat
	rpTick
)

type rpEvent struct {
	t    float64
	at   float64 // a request's stamp, which its visible response counts from
	seq  int64
	kind rpEvKind
	set  int // index into tr.Sets
	idx  []int32
	w    int   // worker index
	cp   int64 // copy id
	gen  uint32
}

type rpQueue []rpEvent

func (q rpQueue) Len() int { return len(q) }
func (q rpQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q rpQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *rpQueue) Push(x any)   { *q = append(*q, x.(rpEvent)) }
func (q *rpQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type rpCopy struct {
	set, task        int
	work, done, from float64 // total run time; run before from; current run began at from
	lat              float64 // latency included in work (replaylatency.go)
	k                int     // its number among its task's copies
	began            float64 // its start decision
	slot             sched.SlotRef
	running, ended   bool
	gen              uint32
}

type rpTask struct {
	copies  int     // copies started
	execAt  float64 // -1 until a copy won
	winRun  float64
	group   int // request group, -1 until requested
	done    bool
	dropped bool // canceled
}

type rpGroup struct {
	set            int
	reqAt          float64
	left, size     int
	delivered      int
	maxExec, maxRn float64
}

type replay struct {
	tr  *sched.Trace
	s   *sched.Scheduler
	ctx context.Context
	o   ReplayOptions
	cfg sched.Config

	q      rpQueue
	seq    int64
	now    float64
	first  float64 // window start
	last   float64 // window end (last recorded event)
	tasks  [][]rpTask
	setIdx map[sched.SetID]int
	copies map[sched.CopyID]*rpCopy
	groups []rpGroup
	exact  []float64 // sorted exact run times, for draws
	slots  int
	batch  bool
	hb     hbState

	acc accum
}

func (r *replay) push(e rpEvent) {
	r.seq++
	e.seq = r.seq
	heap.Push(&r.q, e)
}

func (r *replay) init() error {
	tr := r.tr
	r.batch = r.cfg.Policy == sched.PolicyBatchSRPT || r.cfg.Policy == sched.PolicyBatchFCFS
	r.setIdx = make(map[sched.SetID]int, len(tr.Sets))
	r.copies = map[sched.CopyID]*rpCopy{}
	r.tasks = make([][]rpTask, len(tr.Sets))
	r.first, r.last = math.Inf(1), math.Inf(-1)
	if len(tr.Workers) == 0 {
		return sched.Errorf(sched.EINVALID, "the trace has no workers")
	}
	for wi, w := range tr.Workers {
		r.push(rpEvent{t: w.Up, kind: rpWorkerUp, w: wi})
		if w.Down > 0 {
			r.push(rpEvent{t: w.Down, kind: rpWorkerDown, w: wi})
		}
		r.slots += int(w.Slots)
	}
	for si := range tr.Sets {
		st := &tr.Sets[si]
		r.setIdx[st.ID] = si
		r.tasks[si] = make([]rpTask, len(st.Tasks))
		type key struct {
			kind  rpEvKind
			t, at float64
		}
		byTime := map[key][]int32{}
		var keys []key
		for ti := range st.Tasks {
			tk := &st.Tasks[ti]
			r.tasks[si][ti] = rpTask{execAt: -1, group: -1}
			if int(tk.Index) != ti {
				return sched.Errorf(sched.EINVALID, "set %d: task %d at position %d (tasks must be listed by index from 0)", st.ID, tk.Index, ti)
			}
			disc, req := heardTimes(tk, r.o.RequestHeard)
			for _, ev := range []struct {
				kind  rpEvKind
				t, at float64
			}{{rpDisclose, disc, 0}, {rpRequest, req, tk.RequestedAt}, {rpCancel, tk.CanceledAt, 0}} {
				if ev.t <= 0 {
					continue
				}
				k := key{ev.kind, ev.t, ev.at}
				if _, ok := byTime[k]; !ok {
					keys = append(keys, k)
				}
				byTime[k] = append(byTime[k], tk.Index)
				r.first, r.last = math.Min(r.first, ev.t), math.Max(r.last, ev.t)
			}
			for _, d := range tk.Copies {
				if d > 0 {
					r.exact = append(r.exact, d)
				}
			}
		}
		for _, k := range keys {
			r.push(rpEvent{t: k.t, at: k.at, kind: k.kind, set: si, idx: byTime[k]})
		}
	}
	if math.IsInf(r.first, 0) {
		return sched.Errorf(sched.EINVALID, "the trace has no tasks")
	}
	if tr.CopyDuration == nil && len(r.exact) == 0 {
		return sched.Errorf(sched.EINVALID, "the trace has no copy that ran to its end: no run times to replay")
	}
	slices.Sort(r.exact)
	// Workers up from the start are up at the first event.
	for i := range r.q {
		if r.q[i].kind == rpWorkerUp && r.q[i].t < r.first {
			r.q[i].t = r.first
		}
	}
	heap.Init(&r.q)
	r.startTicks()
	return r.startHeartbeats()
}

func (r *replay) run() error {
	for r.q.Len() > 0 {
		t := r.q[0].t
		r.now = t
		r.pinLag()
		act := false
		for r.q.Len() > 0 && r.q[0].t == t {
			e := heap.Pop(&r.q).(rpEvent)
			r.acc.events++
			act = act || r.decides(e.kind) && (r.o.DecideAtStaleEnds || !r.stale(e))
			if err := r.handle(e); err != nil {
				return err
			}
		}
		if !act {
			continue
		}
		if err := r.decide(); err != nil {
			return err
		}
		if r.acc.events&0xfff == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
	}
	// Busy time of copies still running (none, unless a worker never came
	// back) ends at the last event.
	return nil
}

func (r *replay) apply(ev sched.Event) (sched.ApplyResult, error) {
	r.acc.applied++
	res, err := r.s.Apply(ev)
	if err != nil {
		return res, fmt.Errorf("scheduler rejected event kind %d: %w", ev.Kind, err)
	}
	return res, nil
}

func (r *replay) handle(e rpEvent) error {
	tr := r.tr
	switch e.kind {
	case rpWorkerUp:
		w := tr.Workers[e.w]
		_, err := r.apply(sched.Event{Kind: sched.EventWorkerUp, Time: r.now, Worker: w.ID, Slots: w.Slots, CanSuspend: w.CanSuspend, MemoryMB: w.MemoryMB,
			GPUs: w.GPUs, BoundUser: w.BoundUser})
		return err
	case rpWorkerDown:
		w := tr.Workers[e.w]
		if _, err := r.apply(sched.Event{Kind: sched.EventWorkerDown, Time: r.now, Worker: w.ID}); err != nil {
			return err
		}
		for _, c := range r.copies {
			if !c.ended && c.slot.Worker == w.ID {
				r.stop(c)
				c.ended = true
				r.acc.lost++
			}
		}
	case rpDisclose:
		st := &tr.Sets[e.set]
		infos := make([]sched.TaskInfo, len(e.idx))
		for i, ti := range e.idx {
			tk := &st.Tasks[ti]
			infos[i] = sched.TaskInfo{Index: ti, EstimateSeconds: tk.EstimateSeconds, NoSpeculation: tk.NoSpeculation,
				DeadlineSeconds: tk.DeadlineSeconds, Cpus: tk.Cpus, MemoryMB: tk.MemoryMB, GPUs: tk.GPUs}
		}
		_, err := r.apply(sched.Event{Kind: sched.EventDisclosed, Time: r.now, Set: st.ID, Owner: st.Owner, Tasks: infos, MaxRunning: st.MaxRunning})
		return err
	case rpRequest:
		st := &tr.Sets[e.set]
		var idx []int32
		for _, ti := range e.idx {
			if t := &r.tasks[e.set][ti]; !t.dropped && t.group < 0 {
				idx = append(idx, ti)
			}
		}
		if len(idx) == 0 {
			return nil
		}
		gi := len(r.groups)
		r.groups = append(r.groups, rpGroup{set: e.set, reqAt: e.at, left: len(idx), size: len(idx)})
		for _, ti := range idx {
			r.tasks[e.set][ti].group = gi
		}
		if _, err := r.apply(sched.Event{Kind: sched.EventRequested, Time: r.now, Set: st.ID, Indexes: idx}); err != nil {
			return err
		}
		for _, ti := range idx {
			if r.tasks[e.set][ti].execAt >= 0 {
				r.deliver(e.set, int(ti))
			}
		}
	case rpCancel:
		st := &tr.Sets[e.set]
		var idx []int32
		for _, ti := range e.idx {
			if t := &r.tasks[e.set][ti]; !t.done && !t.dropped && t.execAt < 0 {
				t.dropped = true
				idx = append(idx, ti)
				if t.group >= 0 {
					// A canceled request no longer waits for this task.
					g := &r.groups[t.group]
					g.left--
					if g.left == 0 {
						r.groupDone(t.group)
					}
				}
			}
		}
		if len(idx) == 0 {
			return nil
		}
		_, err := r.apply(sched.Event{Kind: sched.EventCanceled, Time: r.now, Set: st.ID, Indexes: idx})
		return err
	case rpCopyEnd:
		c := r.copies[sched.CopyID(e.cp)]
		if c == nil || c.gen != e.gen || !c.running {
			return nil
		}
		r.stop(c)
		c.ended = true
		res, err := r.apply(sched.Event{Kind: sched.EventCopyFinished, Time: r.now, Copy: sched.CopyID(e.cp), Duration: r.reportedRun(c)})
		r.copyEnded(c, err == nil && res.Won, false)
		if err != nil || !res.Won {
			return err
		}
		t := &r.tasks[c.set][c.task]
		t.execAt, t.winRun = r.now, c.done
		if t.group >= 0 {
			r.deliver(c.set, c.task)
		}
	case rpProgress:
		c := r.copies[sched.CopyID(e.cp)]
		if c == nil || c.gen != e.gen || !c.running {
			return nil
		}
		done := c.done + r.now - c.from
		if _, err := r.apply(sched.Event{Kind: sched.EventCopyProgress, Time: r.now, Copy: sched.CopyID(e.cp), Progress: math.Min(1, done/c.work)}); err != nil {
			return err
		}
		r.scheduleProgress(sched.CopyID(e.cp), c)
	case rpHeartbeat:
		return r.heartbeat(e.w)
	case rpTick:
		r.tick()
	}
	return nil
}

// stop ends c's current run interval now.
func (r *replay) stop(c *rpCopy) {
	if c.running {
		r.busy(c.from, r.now)
		c.done += r.now - c.from
		c.running = false
	}
	c.gen++
}

func (r *replay) busy(a, b float64) {
	if b > a {
		r.acc.busy += b - a
	}
}

func (r *replay) scheduleProgress(id sched.CopyID, c *rpCopy) {
	if r.tr.ProgressEvery <= 0 {
		return
	}
	done := c.done + r.now - c.from
	next := (math.Floor(done/r.tr.ProgressEvery) + 1) * r.tr.ProgressEvery
	if next < c.work {
		r.push(rpEvent{t: r.now + next - done, kind: rpProgress, cp: int64(id), gen: c.gen})
	}
}

func (r *replay) deliver(si, ti int) {
	t := &r.tasks[si][ti]
	if t.done {
		return
	}
	t.done = true
	g := &r.groups[t.group]
	g.left--
	g.maxExec = math.Max(g.maxExec, t.execAt)
	g.maxRn = math.Max(g.maxRn, t.winRun)
	g.delivered++
	r.acc.tasks++
	r.acc.requestedWork += t.winRun
	if !r.batch {
		r.acc.billed += t.winRun
	}
	if g.left == 0 {
		r.groupDone(t.group)
	}
}

func (r *replay) groupDone(gi int) {
	g := &r.groups[gi]
	if g.delivered == 0 {
		return // every task of the request was canceled before a result
	}
	v := math.Max(0, g.maxExec-g.reqAt)
	r.acc.requests++
	r.acc.sumV += v
	if g.maxRn > 0 {
		r.acc.sumSlow += v / g.maxRn
	}
	if r.o.KeepJobs {
		r.acc.jobs = append(r.acc.jobs, JobResult{Set: int32(r.tr.Sets[g.set].ID), Group: int32(gi), Tasks: int32(g.size), RequestedAt: g.reqAt - r.tr.Start, Response: v})
	}
}

// duration is the run time of copy k of task ti of set si.
func (r *replay) duration(si, ti, k int) float64 {
	st := &r.tr.Sets[si]
	if f := r.tr.CopyDuration; f != nil {
		return f(st.ID, int32(ti), k)
	}
	rec := st.Tasks[ti].Copies
	floor := 0.0
	if k < len(rec) {
		d := rec[k]
		if d > 0 {
			return d
		}
		if d < 0 {
			floor = -d
		}
	}
	// A draw among the exact run times above floor.
	lo, _ := slices.BinarySearch(r.exact, math.Nextafter(floor, math.Inf(1)))
	if lo >= len(r.exact) {
		return floor
	}
	g := newRNG(r.o.Seed, 7, uint64(st.ID), uint64(ti), uint64(k))
	return r.exact[lo+int(g.float()*float64(len(r.exact)-lo))%(len(r.exact)-lo)]
}

func (r *replay) decide() error {
	ds := r.s.Decide(r.now)
	r.acc.decisions += int64(len(ds))
	for i := range ds {
		d := &ds[i]
		switch d.Kind {
		case sched.DecisionStart:
			si, ok := r.setIdx[d.Task.Set]
			if !ok || d.Task.Index < 0 || int(d.Task.Index) >= len(r.tasks[si]) {
				return fmt.Errorf("scheduler bug: start of unknown task %d/%d", d.Task.Set, d.Task.Index)
			}
			if r.copies[d.Copy] != nil {
				return fmt.Errorf("scheduler bug: start reuses copy id %d", d.Copy)
			}
			t := &r.tasks[si][d.Task.Index]
			lat := r.copyLatency(si, int(d.Task.Index), t.copies)
			c := &rpCopy{set: si, task: int(d.Task.Index), work: r.duration(si, int(d.Task.Index), t.copies) + lat, lat: lat, slot: d.Slot, running: true, from: r.now,
				k: t.copies, began: r.now}
			t.copies++
			r.copies[d.Copy] = c
			r.push(rpEvent{t: r.now + c.work, kind: rpCopyEnd, cp: int64(d.Copy), gen: c.gen})
			r.scheduleProgress(d.Copy, c)
		case sched.DecisionKill, sched.DecisionSuspend:
			c := r.copies[d.Copy]
			if c == nil {
				return fmt.Errorf("scheduler bug: decision %d names unknown copy %d", d.Kind, d.Copy)
			}
			if c.ended {
				continue
			}
			r.stop(c)
			if d.Kind == sched.DecisionKill {
				c.ended = true
				delete(r.copies, d.Copy)
				r.copyEnded(c, false, true)
			}
		case sched.DecisionResume:
			c := r.copies[d.Copy]
			if c == nil || c.running || c.ended {
				return fmt.Errorf("scheduler bug: resume of copy %d that is not suspended", d.Copy)
			}
			c.running, c.from, c.slot = true, r.now, d.Slot
			r.push(rpEvent{t: r.now + (c.work - c.done), kind: rpCopyEnd, cp: int64(d.Copy), gen: c.gen})
			r.scheduleProgress(d.Copy, c)
		default:
			return fmt.Errorf("scheduler bug: unknown decision kind %d", d.Kind)
		}
	}
	return nil
}

func (r *replay) result() Result {
	a := &r.acc
	res := Result{Requests: a.requests, Tasks: a.tasks, Events: a.events, Applied: a.applied, Decisions: a.decisions, LostCopies: a.lost}
	res.Params.Sched = r.cfg
	res.Params.Slots = r.slots
	if a.requests > 0 {
		res.MeanVisibleResponse = a.sumV / float64(a.requests)
		res.MeanVisibleSlowdown = a.sumSlow / float64(a.requests)
	}
	win := math.Max(r.now, r.last) - r.first
	if win > 0 {
		res.ThroughputPerHour = float64(a.tasks) / (win / 3600)
		if r.slots > 0 {
			res.Load = a.busy / (win * float64(r.slots))
		}
	}
	res.RequestedWork = a.requestedWork
	res.BilledSlotSeconds = a.billed
	if r.batch {
		res.BilledSlotSeconds = a.busy
	}
	if a.requestedWork > 0 {
		res.ScaledBilled = res.BilledSlotSeconds / a.requestedWork
	}
	res.WasteSlotSeconds = math.Max(0, a.busy-a.requestedWork)
	for gi := range r.groups {
		if g := &r.groups[gi]; g.left > 0 {
			res.Unfinished++
		}
	}
	st := r.s.Stats()
	res.SpeculativeStarted, res.SpeculativeWon, res.Beta = st.SpeculativeStarted, st.SpeculativeWon, st.Beta
	res.Jobs = a.jobs
	slices.SortFunc(res.Jobs, func(a, b JobResult) int { return cmp.Compare(a.RequestedAt, b.RequestedAt) })
	return res
}
