package sched

import (
	"math"
	"slices"
)

// The driver's latency. On a live server a copy is not running when Decide
// starts it: the assignment still has to reach its worker and the process
// to fork; and its end reaches the scheduler only when the report has
// travelled back and been committed. Judged by the scheduler's own clock,
// every copy runs its run time plus this latency, which biases β upwards
// (the Hill estimator is not shift-invariant); fitting β on the worker's
// run times alone while judging running copies by the server's clock makes
// a short task look like a straggler as soon as it starts.
//
// So the scheduler keeps one basis, the worker's run time, for both: when
// the driver hands EventCopyFinished the copy's run time (Event.Duration),
// β and t_new learn that, and the difference between the scheduler's clock
// and the run time is a latency sample. A copy started by Decide counts its
// run time from its start decision plus the latency (lagQuantile of the
// recent samples), and a new copy is worth starting only if it beats the
// running one by its run time plus that latency, which it must pay too.
// A driver that gives no Duration (the simulator) has no latency: nothing
// changes there.

const (
	lagWindow = 256 // recent latency samples kept
	lagRefit  = 16  // new samples between re-estimates
	// lagQuantile: the latency used is a high quantile of the samples, so
	// that a copy whose report is merely later than most is not taken for
	// a straggler (the error is conservative: a real straggler is seen a
	// little later); the median lets short tasks flood the cluster with
	// speculative copies (TestLiveNoSpeculationFloodOnShortTasks).
	lagQuantile = 0.9
)

// lagEstimator tracks the driver's dispatch and report latency.
type lagEstimator struct {
	ring  []float64
	n     int
	since int
	value float64 // current estimate, seconds (0 until the first sample)
	buf   []float64
	// pinned: the driver sets the estimate (Scheduler.PinLag); samples
	// are kept but do not move it.
	pinned bool
}

// add records one latency sample (seconds); it reports whether the estimate
// changed.
func (l *lagEstimator) add(x float64) bool {
	if !(x >= 0) || math.IsInf(x, 0) {
		return false
	}
	if len(l.ring) < lagWindow {
		l.ring = append(l.ring, x)
	} else {
		l.ring[l.n%lagWindow] = x
	}
	l.n++
	l.since++
	if l.pinned || l.n > 1 && l.since < lagRefit {
		return false
	}
	l.since = 0
	l.buf = append(l.buf[:0], l.ring...)
	slices.Sort(l.buf)
	v := l.buf[int(lagQuantile*float64(len(l.buf)-1))]
	if v == l.value {
		return false
	}
	l.value = v
	return true
}

// observeLag learns the latency from a finished copy c whose driver gave its
// run time dur (> 0) at now. c's start was already shifted by the latency
// estimated then (startCopy), which is added back.
func (s *Scheduler) observeLag(c *liveCopy, now Time, dur float64) {
	// The time from the start decision to now, by the scheduler's clock
	// (not runTime, which stops at 0 for a copy that ended before its
	// estimated start: that would let the estimate only grow).
	e := now - c.started + c.lagAtStart(s)
	if c.runSoFar > 0 || c.state != cRunning {
		e = c.runTime(now) + c.lagAtStart(s)
	}
	x := e - dur
	if s.lag.add(math.Max(0, x)) {
		// Thresholds moved: speculation scans cached before are stale.
		s.beta.epoch++
	}
}

// lagAtStart is the latency c's start was shifted by: the current estimate
// (it moves slowly; a copy keeps no field of its own so that it stays 64
// bytes).
func (c *liveCopy) lagAtStart(s *Scheduler) float64 { return s.lag.value }

// stragglerAfter is how long a copy must have run before it may be
// speculated: Config.StragglerAfter, and at least the latency, so that a
// copy whose report may merely be late (time since its start decision
// within twice the latency) is not yet taken for a straggler. Without it,
// every copy of a task of a few milliseconds whose latency ran 20% above
// the estimate qualified: 74 speculative copies for 2,000 `true` tasks on
// a loaded machine; a Pareto task's threshold (about (β−1)·t_new) is far
// above the latency and does not move.
func (s *Scheduler) stragglerAfter() float64 { return max(s.cfg.StragglerAfter, s.lag.value) }

// PinLag sets the latency estimate to x (seconds) and keeps it there: the
// samples the scheduler learns from no longer move it, until PinLag is
// called again. For a replay that follows a live scheduler's own estimate.
func (s *Scheduler) PinLag(x float64) {
	s.lag.pinned = true
	if x != s.lag.value {
		s.lag.value = x
		s.beta.epoch++ // thresholds moved: cached speculation scans are stale
	}
}

// Lag is the driver's latency the scheduler currently adds to a copy's start
// decision and to the cost of a new copy (seconds; 0 without Durations).
func (s *Scheduler) Lag() float64 { return s.lag.value }
