package server

import (
	"batchd/sched"
	"batchd/store"
)

// checkCapacity refuses (EFAILEDPRECONDITION, sched.Capacity.Refuse) a
// disclose with a task that no worker up, nor a pilot a pool reported,
// could hold even idle. Call in the scheduler's lane.
func (s *Server) checkCapacity(specs []sched.TaskSpec, arr *store.TaskArray) error {
	cpus, mem := int32(1), int64(0) // the most any task asks for
	if arr != nil {
		cpus, mem = max(cpus, arr.Spec.Cpus), max(mem, arr.Spec.MemoryMB)
	}
	for i := range specs {
		cpus, mem = max(cpus, specs[i].Cpus), max(mem, specs[i].MemoryMB)
	}
	if cpus == 1 && mem == 0 {
		return nil // any worker holds it
	}
	return s.poolCapacity().Refuse(cpus, mem)
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
