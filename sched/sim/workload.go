// The simulated users and jobs: sets disclosed and requested, users' think
// and change decisions, cluster job arrivals, results delivered, and each
// copy's work under the straggler model.

package sim

import (
	"fmt"
	"math"
	"strconv"

	"batchd/sched"
)

// copyWork is the duration of a task's next copy: the task's service time
// in petrou (every copy the same, as a single server has no stragglers),
// else an independent Pareto draw keyed by (set, task, copy number), so the
// k-th copy of a task takes the same time under every policy.
//
// The node-level model (Params.NodeSlowFrac, TaskSkew) changes this: a
// skewed task's copies all take its first copy's draw, and a copy on a
// slow worker takes NodeSlowdown times its draw.
func (m *sim) copyWork(si, ti int32, t *taskRec, slot int32) float64 {
	if m.p.Workload == WorkloadPetrou {
		return t.size
	}
	k := uint64(t.copies)
	if m.p.TaskSkew > 0 {
		if r := newRNG(m.durRNGSeed, 6, uint64(si), uint64(ti)); r.float() < m.p.TaskSkew {
			k = 0
		}
	}
	r := newRNG(m.durRNGSeed, 3, uint64(si), uint64(ti), k)
	d := r.pareto(m.p.TaskScale, m.p.Beta)
	if m.p.NodeSlowFrac > 0 && m.nodeSlow(int(slot)/m.p.SlotsPerWorker) {
		d *= m.p.NodeSlowdown
	}
	return d
}

// nodeSlow reports whether worker w is slow now (Params.NodeSlowFrac): a
// draw keyed by the worker and the epoch, the same under every policy.
func (m *sim) nodeSlow(w int) bool {
	e := uint64(0)
	if m.p.NodeEpoch > 0 {
		e = uint64(m.now / m.p.NodeEpoch)
	}
	r := newRNG(m.durRNGSeed, 7, uint64(w), e)
	return r.float() < m.p.NodeSlowFrac
}

// deliver records that a requested task's result reached its user.
func (m *sim) deliver(si, ti int32) {
	st := &m.sets[si]
	t := &st.tasks[ti]
	g := &st.groups[t.group]
	g.left--
	g.maxExec = math.Max(g.maxExec, t.execAt)
	g.maxRun = math.Max(g.maxRun, t.winRun)
	if m.now >= m.warm && m.now <= m.end {
		m.acc.tasks++
		m.acc.requestedWork += t.winRun
		if !m.batch {
			m.acc.billed += t.winRun
		}
	}
	if g.left == 0 {
		m.groupDone(si, t.group)
	}
}

// groupDone records a request whose every task was delivered, and lets its
// user think about the results.
func (m *sim) groupDone(si, gi int32) {
	st := &m.sets[si]
	g := &st.groups[gi]
	g.done = true
	v := math.Max(0, g.maxExec-g.reqAt)
	// A closed-loop request counts when it was requested in the window
	// (delivered or not: censorOpen counts the rest), an open-loop job when
	// it arrived in it (it is followed to its end).
	measured := g.reqAt >= m.warm && g.reqAt <= m.end
	if st.user < 0 {
		measured = st.arrive >= m.warm && st.arrive <= m.end
		if measured {
			m.measuredLeft--
		}
	}
	if measured {
		m.count(si, gi, v, g.maxRun, false)
	}
	if err := m.releaseWaiters(si); err != nil {
		m.err = err
	}
	if st.user >= 0 {
		u := &m.users[st.user]
		m.q.push(simEvent{t: m.now + u.r.exp(m.p.ThinkMean), kind: evUser, id: int64(st.user)})
	}
}

// count records measured request gi of set si with visible response v and
// service time svc (the longest winning copy; 0: no slowdown).
func (m *sim) count(si, gi int32, v, svc float64, censored bool) {
	g := &m.sets[si].groups[gi]
	m.acc.requests++
	m.acc.sumV += v
	if svc > 0 {
		m.acc.sumSlow += v / svc
	}
	if censored {
		m.acc.censored++
	}
	if m.p.KeepJobs {
		m.acc.jobs = append(m.acc.jobs, JobResult{Set: si + 1, Group: gi, Tasks: g.end - g.first, RequestedAt: g.reqAt, Response: v, Flood: m.sets[si].flood, After: m.sets[si].after, Censored: censored})
	}
}

// censorOpen counts, at the end of a closed-loop run, the requests made in
// the window that were not delivered by its end, each with its response so
// far (end − request, a lower bound), so that every run counts the same
// tasks whatever its policy delivers: those requested in the window. A
// request's slowdown divides by its tasks' longest service time (petrou)
// or the mean copy duration (mixed, whose copies' durations are drawn when
// they start).
func (m *sim) censorOpen() {
	for si := range m.sets {
		st := &m.sets[si]
		if st.user < 0 {
			continue
		}
		for gi := range st.groups {
			g := &st.groups[gi]
			if !g.requested || g.done || g.reqAt < m.warm || g.reqAt > m.end {
				continue
			}
			svc := m.p.meanCopy()
			if m.p.Workload == WorkloadPetrou {
				svc = 0
				for ti := g.first; ti < g.end; ti++ {
					svc = math.Max(svc, st.tasks[ti].size)
				}
			}
			m.count(int32(si), int32(gi), m.end-g.reqAt, svc, true)
		}
	}
}

// newSet creates a set; sizes lists the tasks of each request (group).
func (m *sim) newSet(user int32, sizes []int32) int32 {
	n := int32(0)
	for _, s := range sizes {
		n += s
	}
	st := setRec{user: user, tasks: make([]taskRec, n), groups: make([]groupRec, len(sizes)), arrive: m.now}
	first := int32(0)
	for gi, s := range sizes {
		st.groups[gi] = groupRec{first: first, end: first + s}
		for ti := first; ti < first+s; ti++ {
			st.tasks[ti] = taskRec{execAt: -1, group: int32(gi)}
		}
		first += s
	}
	m.sets = append(m.sets, st)
	return int32(len(m.sets) - 1)
}

// disclose tells the scheduler about set si (waiting for set st.after,
// when it names one).
func (m *sim) disclose(si int32, owner string) error {
	st := &m.sets[si]
	infos := make([]sched.TaskInfo, len(st.tasks))
	for i := range st.tasks {
		infos[i].Index = int32(i)
		if m.p.Estimates {
			if m.p.Workload == WorkloadPetrou {
				infos[i].EstimateSeconds = st.tasks[i].size
			} else {
				infos[i].EstimateSeconds = m.p.meanCopy()
			}
		}
	}
	ev := sched.Event{Kind: sched.EventDisclosed, Time: m.now, Set: sched.SetID(si + 1), Owner: owner, Tasks: infos}
	if st.after > 0 {
		ev.After = []sched.Dependency{{Set: sched.SetID(st.after), Index: sched.WholeSet}}
	}
	return m.apply(ev)
}

// ended reports whether every request of set si was delivered: the set
// ended, as sched.SetOutcome sees it (a simulated task always succeeds).
func (m *sim) ended(si int32) bool {
	for _, g := range m.sets[si].groups {
		if !g.done {
			return false
		}
	}
	return true
}

// releaseWaiters releases the sets that wait for set si once it ended.
func (m *sim) releaseWaiters(si int32) error {
	st := &m.sets[si]
	if len(st.waiters) == 0 || !m.ended(si) {
		return nil
	}
	for _, w := range st.waiters {
		if err := m.apply(sched.Event{Kind: sched.EventWaitEnded, Time: m.now, Set: sched.SetID(w + 1)}); err != nil {
			return err
		}
	}
	st.waiters = nil
	return nil
}

// request requests group gi of set si; tasks that executed while disclosed
// are delivered at once.
func (m *sim) request(si int32, gi int32) error {
	st := &m.sets[si]
	g := &st.groups[gi]
	g.requested, g.reqAt, g.left = true, m.now, g.end-g.first
	idx := make([]int32, 0, g.end-g.first)
	executed := 0
	for ti := g.first; ti < g.end; ti++ {
		idx = append(idx, ti)
		st.tasks[ti].reqd = true
		if st.tasks[ti].execAt >= 0 {
			executed++
		}
	}
	r, err := m.applyR(sched.Event{Kind: sched.EventRequested, Time: m.now, Set: sched.SetID(si + 1), Indexes: idx})
	if err != nil {
		return err
	}
	if len(r.FinishedAtOnce) != executed {
		return fmt.Errorf("scheduler bug: request of %d tasks of set %d, %d executed, but %d finished at once", len(idx), si+1, executed, len(r.FinishedAtOnce))
	}
	for ti := g.first; ti < g.end; ti++ {
		if st.tasks[ti].execAt >= 0 {
			m.deliver(si, ti)
		}
	}
	return nil
}

// userActs is a closed-loop user at the end of a think time (or at the
// start): request the next request of the current set, or — with the
// user's change probability, or when the set is exhausted — cancel the
// rest and disclose a new set, requesting its first request at once.
func (m *sim) userActs(ui int32) error {
	u := &m.users[ui]
	if u.set >= 0 {
		st := &m.sets[u.set]
		change := u.r.float() < u.changeProb // drawn every time: same stream under every policy
		if int(st.next) < len(st.groups) && !change {
			gi := st.next
			st.next++
			return m.request(u.set, gi)
		}
		if int(st.next) < len(st.groups) && (!m.batch || m.p.BatchCancels) {
			if err := m.apply(sched.Event{Kind: sched.EventCanceled, Time: m.now, Set: sched.SetID(u.set + 1)}); err != nil {
				return err
			}
		}
	}
	// A new set of u.setSize requests.
	if m.p.SetSizePerSet {
		u.setSize = u.r.intn(1, m.p.SetSizeMax)
	}
	sizes := make([]int32, u.setSize)
	for i := range sizes {
		sizes[i] = 1
		if m.p.Workload == WorkloadMixed {
			sizes[i] = int32(m.p.jobSize(&u.r))
		}
	}
	si := m.newSet(ui, sizes)
	u.set = si
	st := &m.sets[si]
	if m.p.Workload == WorkloadPetrou {
		for i := range st.tasks {
			st.tasks[i].size = u.r.exp(m.p.ServiceMean)
		}
	}
	if err := m.disclose(si, u.owner); err != nil {
		return err
	}
	st.next = 1
	return m.request(si, 0)
}

// jobArrives is an open-loop job: disclosed and requested whole.
func (m *sim) jobArrives() error {
	size := m.p.SingleJob
	owner, flood := "job", false
	if m.p.FloodWork > 0 {
		// The flooder's one-task jobs, or an ordinary user's job.
		if m.arrivals.float() < m.p.floodProb() {
			owner, flood, size = "flood", true, 1
		} else {
			owner = "user" + strconv.Itoa(m.arrivals.intn(0, max(m.p.OrdinaryUsers, 1)-1))
		}
	}
	if size <= 0 {
		size = m.p.jobSize(&m.arrivals)
	}
	si := m.newSet(-1, []int32{int32(size)})
	m.sets[si].flood = flood
	// A draw keyed by the set, off the arrival stream: the same jobs
	// arrive with and without chains (common random numbers).
	if r := newRNG(m.durRNGSeed, 8, uint64(si)); m.p.ChainProb > 0 && r.float() < m.p.ChainProb && si > 0 && !m.ended(si-1) {
		m.sets[si].after = si // set si-1, numbered from 1
		m.sets[si-1].waiters = append(m.sets[si-1].waiters, si)
	}
	if m.now >= m.warm && m.now <= m.end {
		m.measuredLeft++
	}
	if err := m.disclose(si, owner); err != nil {
		return err
	}
	m.sets[si].next = 1
	if err := m.request(si, 0); err != nil {
		return err
	}
	if m.p.SingleJob > 0 {
		m.arrivalsDone = true
		return nil
	}
	next := m.now + m.arrivals.exp(1/m.arrivalRate)
	if next <= m.end {
		m.q.push(simEvent{t: next, kind: evArrival})
	} else {
		m.arrivalsDone = true
	}
	return nil
}
