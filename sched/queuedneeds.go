package sched

// QueuedNeeds is what the queued work asks of new workers: a pool sizes
// the pilots it submits from it.
type QueuedNeeds struct {
	// LongestSeconds is the longest expected run time (t_new: the task's
	// estimate, else its set's, owner's or everyone's mean duration) of a
	// queued task, either class; 0 when none is known.
	LongestSeconds float64
	// GPUs is the most GPUs a queued task asks for (0: none does).
	GPUs int32
}

// QueuedNeeds scans the queued tasks (O(queued), asked once per pool
// round). The result is a maximum: it does not depend on the order in
// which the sets are visited.
func (s *Scheduler) QueuedNeeds() QueuedNeeds {
	var n QueuedNeeds
	for _, st := range s.sets {
		if st.rq.len() == 0 && st.dq.len() == 0 {
			continue
		}
		hist, histOK := s.historyTNew(st)
		for _, h := range [2]*taskHeap{&st.rq, &st.dq} {
			for _, t := range h.items {
				n.GPUs = max(n.GPUs, int32(t.gpus))
				switch {
				case t.est > 0:
					n.LongestSeconds = max(n.LongestSeconds, t.est)
				case histOK:
					n.LongestSeconds = max(n.LongestSeconds, hist)
				}
			}
		}
	}
	return n
}
