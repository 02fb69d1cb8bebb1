package server

import (
	"fmt"

	"batchd/sched"
	"batchd/store"
)

// checkCapacity refuses (EFAILEDPRECONDITION) a disclose with a task that
// no worker up could hold even idle: more slots of one worker (--cpus)
// than the largest has, or more memory than the largest advertises.
// Such a task would otherwise wait forever. With no worker up it accepts
// (workers may come). An elastic pool that reported pilots can start
// more of them: the largest pilot's slots count as a worker's, and memory
// is not checked while a pool reports (a pilot does not say its memory).
// Call in the scheduler's lane.
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
	c := s.sched.Capacity()
	_, pilots := s.pools.snapshot(s.now())
	pool := len(pilots) > 0
	for _, p := range pilots {
		c.MaxSlots = max(c.MaxSlots, int(p.Slots))
	}
	if c.Workers == 0 && !pool {
		return nil
	}
	if int(cpus) <= c.MaxSlots && (pool || mem <= c.MaxMemoryMB) {
		return nil
	}
	asks := fmt.Sprintf("%d slots", cpus)
	if cpus == 1 {
		asks = "1 slot"
	}
	if mem > 0 {
		asks += " and " + mib(mem)
	}
	has := fmt.Sprintf("the largest worker up has %d slots and %s", c.MaxSlots, mib(c.MaxMemoryMB))
	if pool {
		has = fmt.Sprintf("the largest worker up or pilot of a pool has %d slots", c.MaxSlots)
	}
	return sched.Errorf(sched.EFAILEDPRECONDITION,
		"a task asks for %s of one worker, but %s: no worker could ever run it; ask for less, or add a bigger worker first", asks, has)
}

// mib formats MiB as "512 MiB" or "24 GiB" ("no memory" for 0).
func mib(n int64) string {
	switch {
	case n == 0:
		return "no memory"
	case n%1024 == 0:
		return fmt.Sprintf("%d GiB", n/1024)
	}
	return fmt.Sprintf("%d MiB", n)
}
