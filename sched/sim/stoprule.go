// The stop-rules experiment: what a set's stop rule, applied by the server
// the moment the deciding result arrives, saves against a client that polls
// for that result every second and then cancels the rest.

package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math"

	"batchd/sched"
)

// stopParams is one run of the stop-rules workload: search sets arrive at
// random; each task of a set is a hit with probability HitProb, and the
// first hit to finish decides the set. With Poll 0 the server's stop rule
// cancels the rest of the set at that finish (sched.EventStopped in the
// same step); with Poll > 0 the user's client notices at its next poll,
// every Poll seconds, and cancels then (the same event, later).
type stopParams struct {
	Seed                  int64
	Slots, SlotsPerWorker int
	Sets, Tasks           int
	// MeanGap is the mean time between set arrivals (exponential), s.
	MeanGap float64
	// TaskMean is a task's mean size (exponential), s; each copy runs its
	// task's size times a Pareto(x_m=1, Beta) straggler factor.
	TaskMean, Beta float64
	HitProb        float64
	// Requested: users request every task at once (and pay for what runs);
	// otherwise they disclose them and request the hit alone.
	Requested bool
	Poll      float64
}

// stopResult is what a run measured, per set.
type stopResult struct {
	Billed, Free float64 // slot-seconds per set
	// Decide is the mean time from a set's arrival to its stop (sets with
	// a hit).
	Decide float64
	Events int64
}

type stopCopy struct {
	set                  int
	idx                  int32
	work, done, runStart float64
	running              bool
	gen                  uint32
}

type stopTask struct {
	size   float64
	hit    bool
	copies int32
	done   bool
}

type stopSet struct {
	arrive, phase float64
	tasks         []stopTask
	stopped       bool
	stopAt        float64
	polling       bool
}

type stopEvent struct {
	t    float64
	kind uint8 // 0 arrive, 1 copy end, 2 poll
	set  int
	cp   sched.CopyID
	gen  uint32
	seq  int64
}

type stopQueue []stopEvent

func (q stopQueue) Len() int { return len(q) }
func (q stopQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q stopQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *stopQueue) Push(x any)   { *q = append(*q, x.(stopEvent)) }
func (q *stopQueue) Pop() (x any) { x, *q = (*q)[len(*q)-1], (*q)[:len(*q)-1]; return x }

// stopSim is the state of one run.
type stopSim struct {
	p      stopParams
	s      *sched.Scheduler
	q      stopQueue
	seq    int64
	now    float64
	sets   []stopSet
	copies map[sched.CopyID]*stopCopy
	billed float64
	busy   float64
	events int64
}

func (m *stopSim) push(e stopEvent) {
	m.seq++
	e.seq = m.seq
	heap.Push(&m.q, e)
}

func (m *stopSim) apply(ev sched.Event) sched.ApplyResult {
	ev.Time = m.now
	r, err := m.s.Apply(ev)
	if err != nil {
		panic(fmt.Sprintf("stop-rules sim: scheduler refused %+v: %v", ev, err))
	}
	return r
}

// runStop simulates p to its end: every set decided or run out.
func runStop(ctx context.Context, p stopParams) (stopResult, error) {
	s, err := sched.New(sched.Config{Seed: p.Seed, FirstCopyID: 1})
	if err != nil {
		return stopResult{}, err
	}
	m := &stopSim{p: p, s: s, copies: map[sched.CopyID]*stopCopy{}}
	for w := 0; w < p.Slots/p.SlotsPerWorker; w++ {
		m.apply(sched.Event{Kind: sched.EventWorkerUp, Worker: sched.WorkerID(fmt.Sprintf("w%03d", w)), Slots: int32(p.SlotsPerWorker), CanSuspend: true})
	}
	arr := newRNG(p.Seed, 1)
	t := 0.0
	m.sets = make([]stopSet, p.Sets)
	for i := range m.sets {
		t += arr.exp(p.MeanGap)
		st := &m.sets[i]
		st.arrive, st.phase = t, arr.uniform(0, math.Max(p.Poll, 1e-9))
		st.tasks = make([]stopTask, p.Tasks)
		for k := range st.tasks {
			r := newRNG(p.Seed, 2, uint64(i), uint64(k))
			st.tasks[k] = stopTask{size: r.exp(p.TaskMean), hit: r.float() < p.HitProb}
		}
		m.push(stopEvent{t: t, kind: 0, set: i})
	}
	for m.q.Len() > 0 {
		if m.events%4096 == 0 && ctx.Err() != nil {
			return stopResult{}, ctx.Err()
		}
		m.now = m.q[0].t
		for m.q.Len() > 0 && m.q[0].t == m.now {
			m.step(heap.Pop(&m.q).(stopEvent))
			m.events++
		}
		m.decide()
	}
	if st := m.s.Stats(); st.RunningCopies != 0 || st.QueuedRequested+st.QueuedDisclosed != 0 {
		return stopResult{}, fmt.Errorf("stop-rules sim: work left at the end: %+v", st)
	}
	var dec []float64
	for _, st := range m.sets {
		if st.stopped {
			dec = append(dec, st.stopAt-st.arrive)
		}
	}
	n := float64(p.Sets)
	return stopResult{Billed: m.billed / n, Free: (m.busy - m.billed) / n, Decide: mean(dec), Events: m.events}, nil
}

func (m *stopSim) step(e stopEvent) {
	switch e.kind {
	case 0:
		st := &m.sets[e.set]
		infos := make([]sched.TaskInfo, len(st.tasks))
		for k := range infos {
			infos[k] = sched.TaskInfo{Index: int32(k)}
		}
		id := sched.SetID(e.set + 1)
		m.apply(sched.Event{Kind: sched.EventDisclosed, Set: id, Owner: fmt.Sprintf("u%d", e.set), Tasks: infos})
		if m.p.Requested {
			m.apply(sched.Event{Kind: sched.EventRequested, Set: id})
		}
	case 1:
		c := m.copies[e.cp]
		if c == nil || !c.running || c.gen != e.gen {
			return
		}
		run := c.done + m.now - c.runStart
		m.busy += run
		delete(m.copies, e.cp)
		r := m.apply(sched.Event{Kind: sched.EventCopyFinished, Copy: e.cp, Duration: run})
		if !r.Won {
			return
		}
		st := &m.sets[c.set]
		tk := &st.tasks[c.idx]
		tk.done = true
		if m.p.Requested || tk.hit {
			// A requested task's winner is billed; a disclosed hit is
			// requested once the user sees it, and billed the same.
			m.billed += run
		}
		if !tk.hit || st.stopped || st.polling {
			return
		}
		if m.p.Poll <= 0 {
			m.stop(c.set)
			return
		}
		// The client sees the hit at its next poll.
		st.polling = true
		next := st.phase + m.p.Poll*math.Ceil((m.now-st.phase)/m.p.Poll)
		m.push(stopEvent{t: next, kind: 2, set: c.set})
	case 2:
		if !m.sets[e.set].stopped {
			m.stop(e.set)
		}
	}
}

// stop cancels the rest of set i: a requested task with a live copy is
// billed for its longest-running copy so far (as the server's cancel
// bills it), then the scheduler cancels it all.
func (m *stopSim) stop(i int) {
	st := &m.sets[i]
	st.stopped, st.stopAt = true, m.now
	if m.p.Requested {
		longest := map[int32]float64{}
		for _, c := range m.copies {
			if c.set == i && !st.tasks[c.idx].done {
				run := c.done
				if c.running {
					run += m.now - c.runStart
				}
				longest[c.idx] = math.Max(longest[c.idx], run)
			}
		}
		for _, run := range longest { // a sum: the order does not matter
			m.billed += run
		}
	}
	m.apply(sched.Event{Kind: sched.EventStopped, Set: sched.SetID(i + 1)})
}

// decide carries out the scheduler's decisions at now.
func (m *stopSim) decide() {
	for _, d := range m.s.Decide(m.now) {
		switch d.Kind {
		case sched.DecisionStart:
			i := int(d.Task.Set) - 1
			tk := &m.sets[i].tasks[d.Task.Index]
			r := newRNG(m.p.Seed, 3, uint64(i), uint64(d.Task.Index), uint64(tk.copies))
			tk.copies++
			c := &stopCopy{set: i, idx: d.Task.Index, work: tk.size * r.pareto(1, m.p.Beta), runStart: m.now, running: true}
			m.copies[d.Copy] = c
			m.push(stopEvent{t: m.now + c.work, kind: 1, cp: d.Copy})
		case sched.DecisionKill:
			if c := m.copies[d.Copy]; c != nil {
				m.busy += c.done
				if c.running {
					m.busy += m.now - c.runStart
				}
				delete(m.copies, d.Copy)
			}
		case sched.DecisionSuspend:
			if c := m.copies[d.Copy]; c != nil && c.running {
				c.done += m.now - c.runStart
				c.running = false
				c.gen++
			}
		case sched.DecisionResume:
			if c := m.copies[d.Copy]; c != nil && !c.running {
				c.running, c.runStart = true, m.now
				c.gen++
				m.push(stopEvent{t: m.now + c.work - c.done, kind: 1, cp: d.Copy, gen: c.gen})
			}
		}
	}
}

// stopRulesExp runs the stop-rules workload with the server's rule and
// with a client polling every second, for users who request every task
// and for users who disclose them, and reports billed and free work per
// set and what the rule saves (per seed, on the same random numbers).
func stopRulesExp(ctx context.Context, o Options) (Report, error) {
	base := stopParams{Slots: 64, SlotsPerWorker: 8, Sets: 300, Tasks: 100, TaskMean: 10, Beta: 2, HitProb: 0.03}
	if o.Quick {
		base.Sets = 40
	}
	// Offered load 0.6 if every task of every set ran (a copy's mean
	// factor is β/(β−1) = 2).
	base.MeanGap = float64(base.Tasks) * base.TaskMean * base.Beta / (base.Beta - 1) / (0.6 * float64(base.Slots))
	seeds := o.seeds()
	arms := []bool{true, false}
	polls := []float64{0, 1}
	res := map[[3]int]stopResult{}
	rep := Report{Name: "stop-rules", Title: "Stop rules: the server cancels the rest of a set at the deciding result, against a client that polls every second"}
	for k := range seeds {
		for ai, req := range arms {
			for pi, poll := range polls {
				p := base
				p.Seed, p.Requested, p.Poll = int64(k+1), req, poll
				r, err := runStop(ctx, p)
				if err != nil {
					return Report{}, err
				}
				res[[3]int{k, ai, pi}] = r
				rep.Runs++
				rep.Events += r.Events
				if o.Progress != nil {
					o.Progress("stop-rules", rep.Runs, seeds*len(arms)*len(polls))
				}
			}
		}
	}
	rep.Setup = fmt.Sprintf("%d search sets arrive at random (mean gap %.1f s; offered load 0.6 if every task ran) on %d slots (%d per worker); "+
		"each set has %d tasks of exponential size (mean %g s), each copy runs its size times a Pareto(x_m=1, β=%g) factor, "+
		"and each task is a hit with probability %g: the first hit to finish decides its set. Rule: the server cancels the rest of the set "+
		"in the step that records the hit (sched.EventStopped); poll: the client notices at its next poll, every second from a random phase, "+
		"and cancels then. Requested: users request every task at once and pay for what runs (a stopped task for what it used); "+
		"disclosed: users disclose the tasks and request the hit alone. srpt×fcfs, hopper+grass; every run goes to its end; "+
		"%d seeds, the two modes of a seed on the same random numbers; intervals are Student's t over seeds.",
		base.Sets, base.MeanGap, base.Slots, base.SlotsPerWorker, base.Tasks, base.TaskMean, base.Beta, base.HitProb, seeds)
	names := map[bool]string{true: "requested", false: "disclosed"}
	tab := Table{Title: "Slot-seconds per set (mean over seeds, 95% CI)", Header: []string{"users", "", "billed", "free", "time to decide (s)"}}
	for ai, req := range arms {
		var sums [2][3][]float64
		var saveB, saveF []float64
		for k := range seeds {
			for pi := range polls {
				r := res[[3]int{k, ai, pi}]
				sums[pi][0] = append(sums[pi][0], r.Billed)
				sums[pi][1] = append(sums[pi][1], r.Free)
				sums[pi][2] = append(sums[pi][2], r.Decide)
			}
			rule, poll := res[[3]int{k, ai, 0}], res[[3]int{k, ai, 1}]
			saveB = append(saveB, poll.Billed-rule.Billed)
			saveF = append(saveF, poll.Free-rule.Free)
		}
		for pi, label := range []string{"server's rule", "client polls every 1 s"} {
			tab.Rows = append(tab.Rows, []string{names[req], label, fmtSummary(Summarize(sums[pi][0])), fmtSummary(Summarize(sums[pi][1])), fmtSummary(Summarize(sums[pi][2]))})
		}
		tab.Rows = append(tab.Rows, []string{names[req], "saved by the rule", fmtSummary(Summarize(saveB)), fmtSummary(Summarize(saveF)), ""})
		rep.Claims = append(rep.Claims,
			Claim{Key: "stop-" + names[req] + "-billed-saved", Source: names[req] + " users", Metric: "billed slot-seconds per set saved by the server's rule over polling every 1 s", Paper: "—", Ours: Summarize(saveB), Unit: "s"},
			Claim{Key: "stop-" + names[req] + "-free-saved", Source: names[req] + " users", Metric: "free slot-seconds per set saved by the server's rule over polling every 1 s", Paper: "—", Ours: Summarize(saveF), Unit: "s"})
	}
	rep.Tables = append(rep.Tables, tab)
	return rep, nil
}

// fmtSummary is a summary as "mean ± half-width".
func fmtSummary(s Summary) string {
	if math.IsNaN(s.Mean) {
		return "—"
	}
	return fmt.Sprintf("%.1f ± %.1f", s.Mean, s.HalfWidth)
}
