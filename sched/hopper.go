// Hopper's allocation: the requested class's slots split between jobs
// (Hopper's Pseudocode 1 with ε-fairness), each share filled by GRASS.

package sched

import (
	"math"
	"slices"
)

// holdShare is how many of the n slots of job st's Hopper share that it
// could not use stay free for it (the rest are work-conserving: queued
// requested tasks of later jobs take them, Hopper §5 Pseudocode 3, where a
// job refuses a slot it cannot use and the slot goes to the smallest job
// with unscheduled tasks). A share is held only while a copy of the job is
// younger than StragglerAfter, the detection delay: its straggling cannot
// be seen yet, and Hopper §3 Fig. 2 keeps A's fifth slot free for exactly
// that long. With StragglerAfter 0, no slot is held idle while requested
// work is queued.
func (s *Scheduler) holdShare(st *set, n int, now Time) int {
	if n <= 0 || s.capped(st) || now >= st.lastStart+s.cfg.StragglerAfter {
		return 0
	}
	return n
}

// virtualFactor is Hopper's max(2/β, 1), or Config.VirtualFactor.
func (s *Scheduler) virtualFactor() float64 {
	if s.cfg.VirtualFactor > 0 {
		return s.cfg.VirtualFactor
	}
	return max(2/s.beta.value(), 1)
}

// hopper splits the slots between the requested jobs by Hopper's
// Pseudocode 1 with ε-fairness (§4.3) and fills each job's share by GRASS.
func (s *Scheduler) hopper(now Time, out []Decision) []Decision {
	S := s.slots
	n := s.jobs.n
	if S <= 0 {
		return out
	}
	c := s.virtualFactor()
	fair := 0
	if s.epsilon < 1 {
		fair = int(math.Floor((1 - s.epsilon) * float64(S) / float64(n)))
	}
	sumV := c * float64(s.reqUnfin)
	if float64(S) < sumV && fair > 0 && fair <= floorCap && !s.fullAlloc {
		return s.hopperFloor(fair, c, now, out)
	}
	if fair == 0 && float64(S) < sumV {
		// Slots are short and no fairness floor binds: smallest V first,
		// each up to V; walk only as far as slots last.
		left := S
		var carry shareCarry
		it := &s.jit
		it.start(s.jobs.root)
		for st := it.next(); st != nil && left+carry.n > 0 && s.slotsLeft(true); st = it.next() {
			d := s.desiredV(c, st.unfin)
			share := min(left, d)
			left -= share
			out = s.fillShare(st, share, d, &carry, now, out)
		}
		return out
	}
	// Few enough jobs that every one is looked at: compute the whole
	// allocation, then fill.
	jobs := s.scratch[:0]
	it := &s.jit
	it.start(s.jobs.root)
	for st := it.next(); st != nil; st = it.next() {
		jobs = append(jobs, st)
	}
	s.scratch = jobs
	alloc := hopperAllocate(S, c, s.epsilon, len(jobs), func(i int) int { return jobs[i].unfin }, s.cfg.VirtualFloor, s.alloc[:0])
	s.alloc = alloc
	var carry shareCarry
	for i, st := range jobs {
		if !s.slotsLeft(true) {
			break
		}
		out = s.fillShare(st, alloc[i], s.desiredV(c, st.unfin), &carry, now, out)
	}
	return out
}

// fillShare fills job st up to its Hopper share plus carry.n, the part of
// earlier jobs' shares they could not use now (Hopper §5, Pseudocode 2–3:
// a job refuses a slot it cannot use, and the slot goes to the next job in
// order); with Guideline 2 the job takes no more than its desired
// allocation ⌈V⌉ (capV) unless its share is larger. It leaves in carry what
// of share + carry.n the job neither took nor holds for its detection
// delay (holdShare), for the next job.
func (s *Scheduler) fillShare(st *set, share, capV int, carry *shareCarry, now Time, out []Decision) []Decision {
	target := share + carry.n
	if capV > share {
		target = min(target, capV)
	} else {
		target = min(target, share)
	}
	hold := 0
	if target > st.held {
		out = s.fillJob(st, target, now, out)
		hold = s.holdShare(st, target-st.held, now)
		s.reserve += hold
	}
	carry.pass(max(0, share+carry.n-st.held-hold))
	return out
}

// carryScan bounds how far an unused share travels: after this many jobs
// in a row took none of it, the rest is left to step 3 (queued tasks), so
// that slots nobody can use now do not make every Decide visit every job.
const carryScan = 64

// shareCarry is the unused share passed from job to job (n), and how many
// jobs in a row took none of it (idle).
type shareCarry struct{ n, idle int }

// pass sets the carry for the next job to left, what the job offered c.n
// left of it and of its own share; it drops the carry after carryScan jobs
// in a row that took none.
func (c *shareCarry) pass(left int) {
	if c.n == 0 || left < c.n {
		c.idle, c.n = 0, left
		return
	}
	if c.idle++; c.idle >= carryScan {
		c.n = 0
		return
	}
	c.n = left
}

// hopperFloor is the allocation of hopper's last branch when slots are
// short and a fairness floor 1 ≤ fair ≤ floorCap binds, without visiting
// every job: Σ floors comes from the counts of jobs by remaining tasks, the
// walk visits the jobs that get more than their floor (a prefix in job
// order), and the jobs below their floor are kept in s.under. It fills the
// same jobs in the same order as HopperAllocate would.
func (s *Scheduler) hopperFloor(fair int, c float64, now Time, out []Decision) []Decision {
	if fair != s.underFair {
		s.underFair = fair
		it := &s.jit
		it.start(s.jobs.root)
		for st := it.next(); st != nil; st = it.next() {
			s.updateUnder(st)
		}
	}
	sumBase, small := 0, 0
	for t := 1; t < fair; t++ {
		sumBase += t * s.tcount[t]
		small += s.tcount[t]
	}
	sumBase += fair * (s.jobs.n - small)
	left := max(s.slots-sumBase, 0)
	visited := s.scratch[:0]
	it := &s.jit
	it.start(s.jobs.root)
	stop := false
	var carry shareCarry
	for st := it.next(); st != nil && left+carry.n > 0 && !stop; st = it.next() {
		st.visited = true
		visited = append(visited, st)
		base := min(fair, st.unfin)
		d := s.desiredV(c, st.unfin)
		extra := min(left, max(0, d-base))
		left -= extra
		out = s.fillShare(st, base+extra, d, &carry, now, out)
		stop = !s.slotsLeft(true)
	}
	if !stop && len(s.under) > 0 {
		rest := make([]*set, 0, len(s.under))
		for _, st := range s.under {
			if !st.visited {
				rest = append(rest, st)
			}
		}
		slices.SortFunc(rest, func(a, b *set) int {
			if jobBefore(a, b) {
				return -1
			}
			return 1
		})
		// Jobs before the last visited one were visited; the rest come
		// after the prefix in job order, as in HopperAllocate.
		for _, st := range rest {
			out = s.fillShare(st, min(fair, st.unfin), s.desiredV(c, st.unfin), &carry, now, out)
			if !s.slotsLeft(true) {
				break
			}
		}
	}
	for _, st := range visited {
		st.visited = false
	}
	s.scratch = visited[:0]
	return out
}

// desired is a job's desired allocation ⌈c·remaining⌉: the slots it
// accepts before it refuses more (Hopper §5, Pseudocode 2: a job takes a
// slot while its tasks are not all scheduled to the desired speculation
// level V). Pseudocode 1's ⌊V⌋ would give a job with one straggling task
// left (V = 2/β ≈ 1.6) no slot for its copy, starving exactly the small
// jobs Hopper means to speed up; the implementation allocates slots one at
// a time as they free, so the job below V gets the next one.
func desired(c float64, remaining int) int {
	return int(math.Ceil(c*float64(remaining) - 1e-9))
}

// HopperAllocate is Hopper's Pseudocode 1 with ε-fairness: it splits S
// slots between n jobs, given in the order jobs are served (ascending
// virtual size for SRPT), whose remaining task counts are remaining(i);
// c is max(2/β, 1), so V_i = c·remaining(i).
//
// Every job first gets its fairness floor b_i = min(⌊(1−ε)·S/n⌋, T_i)
// (§4.3; a job's floor never exceeds its remaining tasks: fairness guards
// against starvation and must not hand out idle reservations). Then:
//
//   - S < ΣV (Guideline 2, lines 4–5): in order, smallest V first, each
//     job is topped up to its desired allocation ⌈V_i⌉ (see desired:
//     rounded up, so that a one-task job keeps room for a copy) while
//     slots last.
//   - S ≥ ΣV (Guideline 3, line 7): every slot is shared in proportion to
//     V, ⌊V_i/ΣV·S⌋ (never below the floor: S ≥ ΣV makes it at least
//     ⌊V_i⌋ ≥ T_i), but at least ⌈V_i⌉. Spare slots are worth most as
//     speculation, and larger jobs have more stragglers. Where ⌈V_i⌉ lifts
//     a job one slot above its proportional part the total can pass S by
//     up to a slot a job; the jobs first in order then fill first, and the
//     fill stops when the slots run out.
//
// A share is an upper bound, not a reservation: fillJob takes only the
// slots the job can use now (queued tasks, stragglers worth a copy), and
// Decide lends the rest to disclosed work, which a requested straggler
// takes back by preemption. With no floor this is exactly Pseudocode 1.
// The result is appended to buf; it costs O(n) and allocates nothing when
// buf has room.
func HopperAllocate(S int, c, epsilon float64, n int, remaining func(i int) int, buf []int) []int {
	return hopperAllocate(S, c, epsilon, n, remaining, false, buf)
}

// hopperAllocate is HopperAllocate with a job's desired allocation
// rounded down (⌊V⌋, Config.VirtualFloor) when floorV is set.
func hopperAllocate(S int, c, epsilon float64, n int, remaining func(i int) int, floorV bool, buf []int) []int {
	alloc := buf[:0]
	if n <= 0 || S <= 0 {
		for range max(n, 0) {
			alloc = append(alloc, 0)
		}
		return alloc
	}
	fair := 0
	if epsilon < 1 {
		fair = int(math.Floor((1 - max(epsilon, 0)) * float64(S) / float64(n)))
	}
	sumBase, sumT := 0, 0
	for i := range n {
		t := remaining(i)
		b := min(fair, t)
		sumBase += b
		sumT += t
		alloc = append(alloc, b)
	}
	if sumT > 0 && float64(S) >= c*float64(sumT) {
		// Guideline 3: V_i/ΣV = T_i/ΣT.
		for i := range n {
			t := remaining(i)
			alloc[i] = max(desiredRound(c, t, floorV), int(math.Floor(float64(S)*float64(t)/float64(sumT))))
		}
		return alloc
	}
	left := max(S-sumBase, 0)
	for i := range n {
		if extra := min(left, desiredRound(c, remaining(i), floorV)-alloc[i]); extra > 0 {
			alloc[i] += extra
			left -= extra
		}
	}
	return alloc
}

// fillJob gives job st slots up to target by GRASS: RAS while the job has
// more than two waves of queued tasks, GS in its last two (Config.Grass
// can fix either rule instead); speculative
// copies bounded by MaxEarlyCopies until no task of the job is queued.
func (s *Scheduler) fillJob(st *set, target int, now Time, out []Decision) []Decision {
	if s.cfg.HopperClone {
		return s.fillJobClone(st, target, now, out)
	}
	ras := s.cfg.Grass.useRAS(st.rq.len(), target)
	maxCopies := s.cfg.MaxEarlyCopies
	if st.rq.len() == 0 {
		maxCopies = s.lastWaveCopies(st)
	}
	var cands []specCand
	if len(st.running) > 0 {
		s.specCands = s.candidates(st, true, ras, maxCopies, now, s.specCands)
		cands = s.specCands
	}
	ci := 0
	for st.held < target && s.slotsLeft(true) && !s.capped(st) && !s.fairCapped(st) {
		q := st.rq.peek()
		var cd *specCand
		if ci < len(cands) {
			cd = &cands[ci]
		}
		takeSpec := false
		switch {
		case cd == nil:
		case q == nil:
			takeSpec = true
		case ras:
			takeSpec = true // a positive saving beats starting a new task
		default:
			// GS over an exact job: the task with the highest t_rem, an
			// unstarted task counting its t_new.
			qt, ok := s.tNew(q)
			takeSpec = ok && cd.trem > qt
		}
		if takeSpec {
			ci++
			reason := "speculate-gs"
			if ras {
				reason = "speculate-ras"
			}
			if !s.speculate(cd.t, reason, slotFreeOrPreempt, now, &out) {
				break
			}
			continue
		}
		if q == nil {
			break
		}
		if !s.startQueued(q, "requested", slotFreeOrPreempt, now, &out) {
			if q.plain() || (q.routed() && q.routeOnly()) {
				break
			}
			s.setAside(q)
		}
	}
	return out
}
