package sched

// The scheduler's side of a fired stop rule (stoprule.go): the set's work
// that still needs a run is canceled at once, as a cancel would, in the
// driver's own transaction (the store's finish, the simulator's step).

// stopped cancels every task of the set that still needs a run: queued
// ones leave their queues, running and suspended copies get Kill
// decisions. Executed and finished tasks keep their results.
func (s *Scheduler) stopped(ev Event) (ApplyResult, error) {
	st := s.sets[ev.Set]
	if st == nil {
		// Every task of the set had ended: nothing is left to stop.
		return ApplyResult{}, nil
	}
	var res ApplyResult
	// A snapshot: canceling the last open task forgets the set.
	ts := make([]*task, 0, st.open)
	for _, t := range st.tasks {
		if t != nil && !t.done() {
			ts = append(ts, t)
		}
	}
	for _, t := range ts {
		s.killCopies(t, "stopped")
		s.setState(t, stCanceled, ev.Time)
		res.Canceled++
	}
	return res, nil
}
