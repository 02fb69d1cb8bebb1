package sched

import (
	"fmt"
	"math"
)

// This file is workers whose allocation ends: a pilot in a batch system
// runs until its job's time limit. Such a worker says when it stops taking
// copies (Event.EndsAt, its end less a margin it keeps for handing
// back), and the scheduler gives it no copy that would not end before:
// none at all once that time has come, and none of a task whose expected
// run time (t_new: its estimate, else its set's, owner's or everyone's
// mean) does not fit in what remains. A task with no estimate at all may
// start until the end.
//
// Like a worker bound to one owner (isolation.go), such a worker does not
// take every task, so it is counted (nends) and placement walks the
// worker heap instead of taking its top when any is up.

// checkWorkerEnd checks an end time of worker id (0: none).
func checkWorkerEnd(id WorkerID, endsAt Time) error {
	if math.IsNaN(endsAt) || math.IsInf(endsAt, 0) || endsAt < 0 {
		return Errorf(EINVALID, "worker %s: end time %v", id, endsAt)
	}
	return nil
}

// setWorkerEnd records w's end (0: none; checked by checkWorkerEnd),
// counting workers with one.
func (s *Scheduler) setWorkerEnd(w *worker, endsAt Time) {
	if w.endsAt != 0 {
		s.nends--
	}
	w.endsAt = endsAt
	w.clock = nil
	if endsAt != 0 {
		s.nends++
		w.clock = s
	}
}

// workerStopping ends worker ev.Worker's taking of copies at ev.Time, or
// keeps its end when that is earlier. An unknown worker is left alone.
func (s *Scheduler) workerStopping(ev Event) error {
	if !(ev.Time > 0) {
		return Errorf(EINVALID, "worker %s: stopping at %v (the time must be positive)", ev.Worker, ev.Time)
	}
	w := s.workers[ev.Worker]
	if w == nil || (w.endsAt != 0 && w.endsAt <= ev.Time) {
		return nil
	}
	s.setWorkerEnd(w, ev.Time)
	return nil
}

// timeFits reports whether a copy of t started now would end before w
// stops taking copies.
func (w *worker) timeFits(t *task) bool {
	if w.endsAt == 0 {
		return true
	}
	s := w.clock
	left := w.endsAt - s.now
	if left <= 0 {
		return false
	}
	need, ok := s.tNew(t)
	return !ok || need <= left
}

// selective counts the workers that do not take every task: bound to an
// owner, or ending.
func (s *Scheduler) selective() int { return s.nbound + s.nends }

// tickTo moves the scheduler's idea of now forward (never back): the time
// against which workers' ends are checked.
func (s *Scheduler) tickTo(now Time) {
	if now > s.now {
		s.now = now
	}
}

// timeShutOut reports whether workers with slots are up, every one that
// may run t's owner's tasks ends too soon for t, and one at least does.
func (s *Scheduler) timeShutOut(t *task) bool {
	ending := false
	for _, w := range s.wheap.items {
		if w.slots == 0 || !w.serves(t) {
			continue
		}
		if w.timeFits(t) {
			return false
		}
		ending = true
	}
	return ending
}

// timeDetail says, for Why, how long t is expected to run and how long
// the latest-ending worker that serves its owner has left.
func (s *Scheduler) timeDetail(t *task) string {
	most := math.Inf(-1)
	for _, w := range s.wheap.items {
		if w.slots > 0 && w.serves(t) && w.endsAt-s.now > most {
			most = w.endsAt - s.now
		}
	}
	need, ok := s.tNew(t)
	if !ok || most <= 0 {
		return "every worker up stops taking copies before its allocation ends, and they all do now"
	}
	return fmt.Sprintf("it is expected to run %.0f s; the worker up with the most time left takes copies for %.0f s more", need, most)
}
