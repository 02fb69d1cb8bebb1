package server

import (
	"batchd/sched"
	"batchd/store"
)

// checkCapacity refuses (EFAILEDPRECONDITION, sched.Capacity.Refuse) a
// disclose with a task that no worker up, nor a pilot a pool reported,
// could hold even idle. Call in the scheduler's lane.
func (s *Server) checkCapacity(specs []sched.TaskSpec, arr *store.TaskArray) error {
	most := sched.Need{Cpus: 1} // the most any task asks for, of each
	ask := func(sp *sched.TaskSpec) {
		most = sched.Need{Cpus: max(most.Cpus, sp.Cpus), MemMB: max(most.MemMB, sp.MemoryMB), GPUs: max(most.GPUs, sp.GPUs)}
	}
	if arr != nil {
		ask(&arr.Spec)
	}
	for i := range specs {
		ask(&specs[i])
	}
	if most == (sched.Need{Cpus: 1}) {
		return nil // any worker holds it
	}
	return s.poolCapacity().Refuse(most)
}

// poolCapacity is the scheduler's Capacity with the pilots the elastic
// pools reported. Call in the scheduler's lane.
func (s *Server) poolCapacity() sched.Capacity {
	c := s.sched.Capacity()
	_, pilots := s.pools.snapshot(s.now())
	c.Pool = len(pilots) > 0
	for _, p := range pilots {
		c.PilotSlots = max(c.PilotSlots, int(p.Slots))
	}
	return c
}
