package server

import (
	batchv1 "batchd/proto/batch/v1"
)

// fillQueuedNeeds adds to a pool's answer what the queued work asks of
// new pilots (sched.QueuedNeeds): the longest expected run time, from
// which the pool sizes its pilots' time limits, and the most GPUs a task
// asks for, which its pilots then ask the batch system for.
func (s *Server) fillQueuedNeeds(out *batchv1.ReportPilotsResponse) {
	s.mu.Lock()
	n := s.sched.QueuedNeeds()
	s.mu.Unlock()
	out.LongestQueuedSeconds = n.LongestSeconds
	out.MostQueuedGpus = n.GPUs
}
