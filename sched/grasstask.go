// GRASS with per-task estimates and a bound on a task's copies in its job's
// last wave (Config.GrassPerTask, Config.LastWaveCopies,
// Config.LastWaveShare).

package sched

import "math"

// lastWaveCopies bounds the live copies of one task of job st once no task
// of st is queued: Config.LastWaveCopies, or no bound (GRASS's GS as
// written, which lifts the early bound in the last wave); with
// Config.LastWaveShare, the job's share of the slots spread over its
// remaining tasks (shareCopies) when that is more.
func (s *Scheduler) lastWaveCopies(st *set) int {
	if s.cfg.LastWaveShare {
		return max(s.lastWaveFloor(), s.shareCopies(st))
	}
	if s.cfg.LastWaveCopies > 0 {
		return s.cfg.LastWaveCopies
	}
	return math.MaxInt32
}

// lastWaveFloor is the fewest copies Config.LastWaveShare allows a task in
// its job's last wave: Config.LastWaveCopies, or MaxEarlyCopies (GRASS's
// early bound, σ = max(2/β, 1) rounded up) when that is unset.
func (s *Scheduler) lastWaveFloor() int {
	if s.cfg.LastWaveCopies > 0 {
		return s.cfg.LastWaveCopies
	}
	return s.cfg.MaxEarlyCopies
}

// shareCopies is ⌈S_j / R⌉: the copies per task that fill job st's share
// of the slots, S_j = S/N (the cluster's slots over the requested jobs in
// flight), over its R remaining tasks.
//
// Why this bound (GRASS Appendix A, Theorem 1; Hopper §4): for a job of R
// remaining tasks on S_j slots, the proactive policy that minimises its
// completion time runs k = σ copies per task while R·σ ≥ S_j and
// k = S_j / R in the last wave (R·σ < S_j): the last wave speculates
// "to ensure all slots are used" — the job's slots, not the cluster's.
// GRASS's reactive GS keeps that aggressiveness but, run best effort, takes
// every free slot as the job's S, so a skewed task (every copy as slow as
// the last) collects copies until the cluster saturates. A fixed bound
// (Config.LastWaveCopies) stops that, but it also stops a job from using
// the slots it would have on a large cluster. Hopper's answer to "how many
// slots may a job spend on speculation" is its allocation, and its
// ε-fairness promises every job about S/N of them (§4.3); S/N is the same
// for SRPT and Hopper, grows with the cluster, and shrinks as more jobs
// compete, so the bound follows the slots a job can expect rather than a
// constant.
func (s *Scheduler) shareCopies(st *set) int {
	n, r := s.jobs.n, st.unfin
	if n <= 0 || r <= 0 || s.slots <= 0 {
		return 0
	}
	return int((int64(s.slots) + int64(n)*int64(r) - 1) / (int64(n) * int64(r)))
}

// taskTNew is the t_new of a further copy of t under Config.GrassPerTask:
// once t runs a speculative copy beside its first, the copies already show
// how long this task takes, so a new copy is expected to take at least
// what the task's best running copy takes in all, E[τ | τ > ω] =
// ω + E[τ − ω | τ > ω] (GRASS §4's t_rem, from the copy's progress or the
// Pareto tail), and never less than the job's t_new tn. A task whose input
// makes every copy slow (skew) then stops collecting copies, while a task
// one slow worker delays gets its first speculative copy as before. Without
// GrassPerTask, or with fewer than two running copies, it is tn.
func (s *Scheduler) taskTNew(t *task, tn, beta float64, now Time) float64 {
	if !s.cfg.GrassPerTask {
		return tn
	}
	n, best := 0, math.Inf(1)
	for _, c := range t.copies {
		if c.state != cRunning {
			continue
		}
		n++
		run := c.runTime(now)
		best = min(best, run+TRem(run, c.progress, beta, tn))
	}
	if n < 2 {
		return tn
	}
	return max(tn, best)
}
