// Fair share between users in the requested class (DESIGN.md, scheduling
// order step 2).
//
// SRPT orders the requested class by remaining work across all users, so a
// user who floods the queue with small sets holds every slot while another
// user's larger set waits. With Config.FairShare, while two or more users
// have queued requested tasks, each slot that frees goes to the waiting
// user with the fewest requested slots held per unit of weight (progressive
// filling: weighted max-min fairness). Between users who hold as many,
// one who used much more lately waits: decayed usage per weight is
// compared by level (fsLevel: a level per factor fsUsageFactor), and
// within a level the user whose first job comes first by SRPT (jobBefore)
// goes first, so users of like standing keep SRPT across users. (Ties by
// exact usage made Petrou's one-slot users take turns by usage instead of
// shortest first: mean visible slowdown 50.8, against 29.9 by level and
// 11.7 by SRPT alone; docs/sim.md, "The price of fair share".) Inside the
// chosen user's share the order is the usual one: the user's first job by
// SRPT starts its first queued task. Once fewer than two users wait, the
// rest of Decide runs as it always has (Hopper between jobs, GRASS inside
// them), except that a user with no queued work takes no new copy that
// would put it above the one user still waiting (fairCapped). A user who
// cannot use its share leaves it to the others, so no slot idles while
// requested work waits.
//
// With one user, nothing here decides anything: fairFill needs two waiting
// users and fairCapped never blocks the only one, so the decisions are
// exactly those without fair share (TestFairShareOneUserIdentical).
//
// Usage is slot-seconds of finished requested copies (what the ledger
// bills), decayed with a half-life. All users decay at the same rate, so
// values are kept scaled to a reference time (ref): comparing them needs no
// per-decision decay. Levels are taken of the values as of ref, which
// moves to the newest usage once it is a half-life behind (users regroup
// then, and the heap is rebuilt): the unit of the levels is that of the
// newest usage within a factor 2, and the order of users changes only
// when usage is added.

package sched

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultFairShareHalfLife is the half-life of usage (seconds) when
// Config.FairShareHalfLife is 0: an hour.
const DefaultFairShareHalfLife = 3600

// fsUser is one user's standing in the requested class.
type fsUser struct {
	name   string
	weight float64 // > 0; 1 unless set
	held   int     // slots held by running requested-class copies
	queued int     // queued requested-class tasks
	usage  float64 // decayed slot-seconds, scaled to fairShare.ref
	level  int     // fsLevel of usage/weight
	hpos   int     // position+1 in fairShare.heap; 0 when not there
	jobs   []*set  // heap of the user's jobs with queued tasks, by jobBefore
}

// fairShare is the scheduler's fair-share state.
type fairShare struct {
	on       bool
	halfLife float64 // seconds; +Inf: no decay
	users    map[string]*fsUser
	heap     []*fsUser // users with queued requested tasks, fsBefore order
	ref      Time      // usage values are as of ref
	refSet   bool
	gate     bool      // fairFill ran with users still waiting: fairCapped applies
	outUsers []*fsUser // scratch: users taken out of heap for one fairFill
	outSets  []*set    // scratch: capped jobs taken out of their user's heap
}

func (f *fairShare) init(cfg Config) {
	f.on = cfg.FairShare
	f.halfLife = cfg.FairShareHalfLife
	if f.halfLife == 0 {
		f.halfLife = DefaultFairShareHalfLife
	}
	if f.halfLife < 0 {
		f.halfLife = math.Inf(1)
	}
	f.users = make(map[string]*fsUser)
}

// user returns name's record, made on first use.
func (f *fairShare) user(name string) *fsUser {
	u := f.users[name]
	if u == nil {
		u = &fsUser{name: name, weight: 1}
		f.users[name] = u
	}
	return u
}

// fsBefore orders waiting users: fewer held slots per weight first; then
// the lower usage level (fsLevel), so a user who ran much lately waits
// behind one who ran little; then the user whose first job comes first in
// jobBefore order, so users of like standing take the slot shortest job
// first, as without fair share; then by name. Each step compares a total
// order on users, so the order is a strict weak one, as the heap needs.
func fsBefore(a, b *fsUser) bool {
	ha, hb := float64(a.held)*b.weight, float64(b.held)*a.weight
	if ha != hb {
		return ha < hb
	}
	if a.level != b.level {
		return a.level < b.level
	}
	ja, jb := a.first(), b.first()
	switch {
	case ja != nil && jb != nil && ja != jb:
		return jobBefore(ja, jb)
	case ja != nil && jb == nil:
		return true
	case ja == nil && jb != nil:
		return false
	}
	return a.name < b.name
}

// first is u's first job with queued tasks in jobBefore order, nil when
// none is in u's heap.
func (u *fsUser) first() *set {
	if len(u.jobs) == 0 {
		return nil
	}
	return u.jobs[0]
}

// fsUsageUnit is the usage per weight (slot-seconds) below which a user's
// usage level is 0, and fsUsageFactor the factor between levels: level
// n ≥ 1 holds usage per weight in [unit·kⁿ⁻¹, unit·kⁿ). Factor 16 gave the
// lowest slowdown on Petrou's users among 2, 4, 16 and 64 and the same
// flood protection as all of them (docs/sim.md).
const (
	fsUsageUnit   = 60.0
	fsUsageFactor = 16.0
)

// fsLevel is the usage level of usage per weight x: 0 below fsUsageUnit,
// else floor(log_k(x/unit)) + 1.
func fsLevel(x float64) int {
	if !(x >= fsUsageUnit) {
		return 0
	}
	return int(math.Floor(math.Log(x/fsUsageUnit)/math.Log(fsUsageFactor))) + 1
}

// setLevel recomputes u's usage level and moves u in the heap.
func (f *fairShare) setLevel(u *fsUser) {
	u.level = fsLevel(u.usage / u.weight)
	f.fix(u)
}

// fix moves u to its place in the users' heap, if it is there.
func (f *fairShare) fix(u *fsUser) {
	if u.hpos > 0 {
		f.down(u.hpos - 1)
		f.up(u.hpos - 1)
	}
}

// fairSync brings st's owner's counters and heaps up to date with st's held
// slots, queued tasks and job key. updateUnder calls it, so it follows every
// change to those.
func (s *Scheduler) fairSync(st *set) {
	if !s.fair.on {
		return
	}
	u := st.fsUser
	if u == nil {
		u = s.fair.user(st.owner)
		st.fsUser = u
	}
	q := st.rq.len()
	if dh, dq := st.held-st.fsHeld, q-st.fsQueued; dh != 0 || dq != 0 {
		st.fsHeld, st.fsQueued = st.held, q
		u.held += dh
		u.queued += dq
		s.fair.fixUser(u)
	}
	if st.fpos < 0 {
		return // out of u's heap until fairFill ends
	}
	want := st.inTree && q > 0
	switch {
	case want && st.fpos == 0:
		st.fpos = len(u.jobs) + 1
		u.jobs = append(u.jobs, st)
		jobHeapUp(u.jobs, st.fpos-1)
	case !want && st.fpos > 0:
		jobHeapRemove(&u.jobs, st)
	case want:
		i := st.fpos - 1
		jobHeapDown(u.jobs, i)
		jobHeapUp(u.jobs, st.fpos-1)
	default:
		return
	}
	s.fair.fix(u) // u's first job may have changed
}

// fixUser keeps u in the users' heap exactly while it has queued work, at
// the right place.
func (f *fairShare) fixUser(u *fsUser) {
	want := u.queued > 0
	switch {
	case want && u.hpos == 0:
		u.hpos = len(f.heap) + 1
		f.heap = append(f.heap, u)
		f.up(u.hpos - 1)
	case !want && u.hpos > 0:
		f.remove(u)
	case want:
		f.down(u.hpos - 1)
		f.up(u.hpos - 1)
	}
}

// fairFill hands free (or preemptible) slots to waiting users one at a
// time, the most deprived first, while two or more users wait.
func (s *Scheduler) fairFill(now Time, out []Decision) []Decision {
	f := &s.fair
	f.gate = f.on && len(f.heap) > 0
	if !f.on || len(f.heap) < 2 {
		return out
	}
	for len(f.heap) >= 2 && s.slotsLeft(true) {
		u := f.heap[0]
		st := s.fairJob(u)
		if st != nil && f.heap[0] != u {
			continue // fairJob took u's first jobs out: u moved down
		}
		if st == nil {
			// Every job of u is at its cap or its next task fits nowhere
			// now: u sits out the rest of this fill.
			f.remove(u)
			f.outUsers = append(f.outUsers, u)
			continue
		}
		t := st.rq.peek()
		if !s.startQueued(t, "requested", slotFreeOrPreempt, now, &out) {
			if s.plainFor(t) {
				break
			}
			if t.plain() {
				// Only workers bound to other owners have room: u sits
				// out the rest of this fill (isolation.go).
				f.remove(u)
				f.outUsers = append(f.outUsers, u)
				continue
			}
			s.setAside(t)
			s.fairSync(st)
		}
	}
	for _, st := range f.outSets {
		st.fpos = 0
		s.fairSync(st)
	}
	clear(f.outSets)
	f.outSets = f.outSets[:0]
	for _, u := range f.outUsers {
		f.fixUser(u)
	}
	clear(f.outUsers)
	f.outUsers = f.outUsers[:0]
	f.gate = len(f.heap) > 0
	return out
}

// fairJob is u's first job in SRPT order that may start a task now; jobs at
// their cap are taken out of u's heap until fairFill ends.
func (s *Scheduler) fairJob(u *fsUser) *set {
	moved := false
	for len(u.jobs) > 0 {
		st := u.jobs[0]
		if st.rq.len() > 0 && !s.capped(st) {
			if moved {
				s.fair.fix(u)
			}
			return st
		}
		moved = true
		jobHeapRemove(&u.jobs, st)
		st.fpos = -1 // out: fairSync must not put it back before fairFill ends
		s.fair.outSets = append(s.fair.outSets, st)
	}
	return nil
}

// fairCapped reports whether job st must take no new copy because another
// user waits with fewer slots per weight than st's owner would hold. It
// binds only after a fairFill that left users waiting (for want of slots
// or room), in the passes of the same Decide.
func (s *Scheduler) fairCapped(st *set) bool {
	f := &s.fair
	if !f.gate || len(f.heap) == 0 {
		return false
	}
	top := f.heap[0]
	u := st.fsUser
	if u == nil || u == top || (s.nbound > 0 && s.ownerShutOut(top.name)) {
		// A user no worker may serve (every one is bound to another
		// owner) holds nobody back.
		return false
	}
	return float64(u.held+1)*top.weight > float64(top.held)*u.weight
}

// fairVictimOK reports whether a queued task of job q may suspend a
// running requested copy of job v (preemptive SRPT) under fair share: a
// copy of the same user's, or, when q's owner is the most deprived waiting
// user, one whose owner keeps at least as many slots per weight after the
// swap as q's owner then holds.
func (s *Scheduler) fairVictimOK(q, v *set) bool {
	f := &s.fair
	if !f.on {
		return true
	}
	qu, vu := q.fsUser, v.fsUser
	if qu == nil || vu == nil || qu == vu {
		return true
	}
	if len(f.heap) > 0 && f.heap[0] != qu {
		return false
	}
	return float64(vu.held-1)*qu.weight >= float64(qu.held+1)*vu.weight
}

// fairEndDecide clears the gate at the end of Decide.
func (s *Scheduler) fairEndDecide() { s.fair.gate = false }

// fairUsage adds slot-seconds of owner's requested work at now.
func (s *Scheduler) fairUsage(owner string, slotSeconds float64, now Time) {
	if !s.fair.on || !(slotSeconds > 0) || math.IsInf(slotSeconds, 0) {
		return
	}
	f := &s.fair
	u := f.user(owner)
	u.usage += slotSeconds * f.scale(now)
	f.setLevel(u)
}

// scale is the factor that turns a value at now into one at ref, moving
// ref forward (and every stored value with it) when now is far ahead.
func (f *fairShare) scale(now Time) float64 {
	if math.IsInf(f.halfLife, 1) {
		return 1
	}
	if !f.refSet {
		f.ref, f.refSet = now, true
	}
	if e := (now - f.ref) / f.halfLife; e > 1 || e < -64 {
		// Levels are those of usage as of ref, so ref stays within a
		// half-life of the newest usage; moving it regroups the users.
		k := math.Exp2(-e)
		for _, u := range f.users {
			u.usage *= k
			u.level = fsLevel(u.usage / u.weight)
		}
		f.ref = now
		for i := len(f.heap)/2 - 1; i >= 0; i-- {
			f.down(i)
		}
	}
	return math.Exp2((now - f.ref) / f.halfLife)
}

// decayed is u's usage as of now.
func (f *fairShare) decayed(u *fsUser, now Time) float64 {
	if math.IsInf(f.halfLife, 1) || !f.refSet {
		return u.usage
	}
	return u.usage * math.Exp2(-(now-f.ref)/f.halfLife)
}

// names lists the users by name.
func (f *fairShare) names() []string {
	ns := make([]string, 0, len(f.users))
	for n := range f.users {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// SetUserWeight sets a user's fair-share weight (> 0; the default is 1).
func (s *Scheduler) SetUserWeight(name string, weight float64) error {
	if !(weight > 0) || math.IsInf(weight, 0) {
		return Errorf(EINVALID, "weight %v of user %q must be a positive number", weight, name)
	}
	u := s.fair.user(name)
	u.weight = weight
	s.fair.setLevel(u)
	return nil
}

// userWeight is name's fair-share weight (1 unless set).
func (s *Scheduler) userWeight(name string) float64 {
	if u := s.fair.users[name]; u != nil {
		return u.weight
	}
	return 1
}

// AddUsage adds slotSeconds of a user's work done at time at to its decayed
// usage: the server restores usage from the ledger this way after a
// restart. It is a no-op without Config.FairShare.
func (s *Scheduler) AddUsage(name string, slotSeconds float64, at Time) {
	s.fairUsage(name, slotSeconds, at)
}

// UserShare is one user's fair-share standing, for why, metrics and the
// cluster view.
type UserShare struct {
	User   string
	Weight float64
	// Held is the slots the user's running requested copies hold; Queued
	// its queued requested tasks.
	Held, Queued int
	// Share is the user's weighted max-min fair share of the slots among
	// the users with requested work (held or queued): what it would hold
	// if everyone's demand were served in proportion to weight, a share a
	// user cannot use going to the others. 0 for a user with none.
	Share float64
	// Usage is the decayed slot-seconds of finished requested work at now.
	Usage float64
}

// UserShares returns every known user's standing at now, by name. It costs
// O(users·log users) and is meant for observers, not for decisions.
func (s *Scheduler) UserShares(now Time) []UserShare {
	f := &s.fair
	names := f.names()
	out := make([]UserShare, 0, len(names))
	for _, n := range names {
		u := f.users[n]
		out = append(out, UserShare{User: n, Weight: u.weight, Held: u.held, Queued: u.queued, Usage: f.decayed(u, now)})
	}
	waterFill(float64(s.slots), out)
	return out
}

// waterFill sets Share of each user with demand (Held+Queued) to its
// weighted max-min fair part of slots.
func waterFill(slots float64, us []UserShare) {
	idx := make([]int, 0, len(us))
	for i := range us {
		if us[i].Held+us[i].Queued > 0 {
			idx = append(idx, i)
		}
	}
	// Users whose demand per weight is smallest are satisfied first.
	slices.SortFunc(idx, func(a, b int) int {
		da := float64(us[a].Held+us[a].Queued) / us[a].Weight
		db := float64(us[b].Held+us[b].Queued) / us[b].Weight
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return strings.Compare(us[a].User, us[b].User)
	})
	wsum := 0.0
	for _, i := range idx {
		wsum += us[i].Weight
	}
	left := slots
	for _, i := range idx {
		d := float64(us[i].Held + us[i].Queued)
		fairPart := left * us[i].Weight / wsum
		us[i].Share = math.Min(d, fairPart)
		left -= us[i].Share
		wsum -= us[i].Weight
	}
}

// ShareOf returns user's standing at now (zero Share when it has no
// requested work).
func (s *Scheduler) ShareOf(user string, now Time) UserShare {
	for _, us := range s.UserShares(now) {
		if us.User == user {
			return us
		}
	}
	return UserShare{User: user, Weight: 1}
}

// FairShareOn reports whether the requested class is split between users.
func (s *Scheduler) FairShareOn() bool { return s.fair.on }

// WaitingUsers is the number of users with queued requested tasks.
func (s *Scheduler) WaitingUsers() int { return len(s.fair.heap) }

// WhyFairShare: the task's owner holds at least its fair share of the
// slots while other users wait with requested work (fairshare.go).
const WhyFairShare WhyReason = "fair-share"

// fairWhy turns a requested task's answer into WhyFairShare when its owner
// holds its share or more while another user waits, and estimates its
// start under that share: the owner's queued tasks before it run on the
// owner's share of the slots. per is the seconds a task ahead takes, tn
// this task's.
func (s *Scheduler) fairWhy(a *WhyAnswer, t *task, per, tn float64) {
	f := &s.fair
	if !f.on || a.Class != "requested" || len(f.heap) < 2 || a.Reason == WhyCapped || a.Reason == WhyResources || a.Reason == WhySuspended {
		return
	}
	st := t.set
	u := st.fsUser
	if u == nil {
		return
	}
	sh := s.ShareOf(u.name, 0)
	if float64(u.held) < math.Floor(sh.Share+1e-9) || sh.Share <= 0 {
		return
	}
	a.Reason = WhyFairShare
	// The owner's queued tasks before this one: its position in its set,
	// and the queued tasks of the owner's jobs served before its set.
	ahead, exact := a.Position, a.Exact
	for i, j := range u.jobs {
		if i >= WhyScanLimit {
			exact = false
			break
		}
		if j != st && jobBefore(j, st) {
			ahead += j.rq.len()
		}
	}
	a.Exact = exact
	start := float64(ahead+1) / sh.Share * per
	a.StartInSeconds = start
	a.FinishInSeconds = start + tn
	b := make([]byte, 0, 256)
	b = append(b, u.name...)
	b = append(b, " is using "...)
	b = strconv.AppendInt(b, int64(u.held), 10)
	b = append(b, " of "...)
	b = appendPlural(b, s.slots, "slot")
	b = append(b, "; their share is "...)
	b = strconv.AppendFloat(b, sh.Share, 'g', 3, 64)
	b = append(b, " (weight "...)
	b = strconv.AppendFloat(b, u.weight, 'g', 3, 64)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(len(f.heap)-1), 10)
	b = append(b, " other users waiting); start: "...)
	if !exact {
		b = append(b, "at least "...)
	}
	b = appendPlural(b, ahead, "task")
	b = append(b, " of theirs ahead, on their share at "...)
	b = appendSeconds(b, per)
	b = append(b, " each"...)
	a.Assumptions = string(b)
}
