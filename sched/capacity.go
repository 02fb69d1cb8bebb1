package sched

// This file answers whether a task could ever run on the workers that are
// up: a task that asks for more slots of one worker, or more memory, than
// the largest worker has would otherwise wait forever with nothing saying
// why.

// Capacity is the size of the workers that are up (registered with at
// least one slot).
type Capacity struct {
	// Workers counts the workers up; 0 when none is.
	Workers int
	// MaxSlots is the most slots one worker has; MaxMemoryMB the most
	// memory one advertises (MiB, 0 when none advertises memory).
	MaxSlots    int
	MaxMemoryMB int64
}

// Capacity returns the size of the largest workers up now.
func (s *Scheduler) Capacity() Capacity {
	var c Capacity
	for _, w := range s.workers { // a max: the order does not matter
		if w.slots <= 0 {
			continue
		}
		c.Workers++
		c.MaxSlots = max(c.MaxSlots, int(w.slots))
		c.MaxMemoryMB = max(c.MaxMemoryMB, w.memMB)
	}
	return c
}

// Holds reports whether a worker of capacity c could hold a copy of a
// task that asks for cpus slots (0 = 1) and memMB MiB when it is idle.
// With no worker up it reports true: workers may yet come.
func (c Capacity) Holds(cpus int32, memMB int64) bool {
	if c.Workers == 0 {
		return true
	}
	return int(max(cpus, 1)) <= c.MaxSlots && memMB <= c.MaxMemoryMB
}

// couldEverFit reports whether some worker up could hold a copy of t when
// idle (for Why).
func (s *Scheduler) couldEverFit(t *task) bool {
	if t.plain() {
		return s.slots > 0
	}
	for _, w := range s.workers {
		if w.couldFit(t) {
			return true
		}
	}
	return false
}
