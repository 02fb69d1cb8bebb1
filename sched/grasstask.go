// GRASS with per-task estimates and a bound on a task's copies in its job's
// last wave (Config.GrassPerTask, Config.LastWaveCopies).

package sched

import "math"

// lastWaveCopies bounds the live copies of one task once no task of its
// job is queued: Config.LastWaveCopies, or no bound (GRASS's GS as
// written, which lifts the early bound in the last wave).
func (s *Scheduler) lastWaveCopies() int {
	if s.cfg.LastWaveCopies > 0 {
		return s.cfg.LastWaveCopies
	}
	return math.MaxInt32
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
