package sched

// This file is the per-set concurrency cap (--max-running N).
//
// A set with a cap never has more than N copies running at once, and its
// speculative copies count: a copy holds a slot and whatever the task
// reaches (a licence, a database connection) just as an original does, so
// a set at its cap gets no speculative copy until one of its copies ends.
// Suspended copies do not count (they hold no slot); resuming one counts
// again and waits for room like a start.
//
// Every place that starts or resumes a copy asks capped first. A capped set
// blocks no other set: it leaves the disclosed class's heap (dsets) while
// it is at its cap and comes back when a copy ends (syncDisclosed, O(log
// sets)); in the requested class Hopper still counts the job, but fillJob
// and the backfill skip it, so its share goes to the jobs after it (work
// conservation, as for any share a job cannot use) and no slot is held
// for it.

// capped reports whether st runs as many copies as its cap allows.
func (s *Scheduler) capped(st *set) bool {
	return st.maxRun > 0 && st.nrun >= st.maxRun
}

// syncDisclosed keeps st in s.dsets exactly while it has queued disclosed
// tasks and room under its cap.
func (s *Scheduler) syncDisclosed(st *set) {
	want := st.dq.len() > 0 && !s.capped(st)
	switch {
	case want && st.dpos < 0:
		s.dsets.push(st)
	case !want && st.dpos >= 0:
		s.dsets.remove(st)
	}
}

// setMaxRunning sets st's cap to n (0 = none). Copies already running
// above a lowered cap run on; no new one starts until the set is below it.
// NoMaxRunning, as an EventDisclosed's MaxRunning without tasks, removes
// the set's cap (an update of the set in place).
const NoMaxRunning = -1

func (s *Scheduler) setMaxRunning(st *set, n int32) {
	st.maxRun = n
	s.syncDisclosed(st)
}

// MaxRunning returns the cap of set id and its running copies (0, 0 for
// an unknown set).
func (s *Scheduler) MaxRunning(id SetID) (limit, running int) {
	st := s.sets[id]
	if st == nil {
		return 0, 0
	}
	return int(st.maxRun), int(st.nrun)
}
