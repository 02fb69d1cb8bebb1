package sched

import (
	"strconv"
	"strings"
)

// This file answers whether a task could ever run on the workers that are
// up: a task that asks for more slots of one worker, more memory or more
// GPUs than the largest worker has would otherwise wait forever with
// nothing saying why.

// Capacity is the size of the workers that are up (registered with at
// least one slot), and of the pilots an elastic pool reported.
type Capacity struct {
	// Workers counts the workers up; 0 when none is.
	Workers int
	// MaxSlots is the most slots one worker has; MaxMemoryMB the most
	// memory one advertises (MiB, 0 when none advertises memory).
	MaxSlots    int
	MaxMemoryMB int64
	// MaxGPUs is the most GPUs one worker offers (0 when none does).
	MaxGPUs int32
	// PilotSlots is the most slots of a pilot a pool reported; Pool says
	// a pool reported pilots (it can start more, of unknown memory).
	PilotSlots int
	Pool       bool
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
		c.MaxGPUs = max(c.MaxGPUs, w.gpus)
	}
	return c
}

// Need is what one copy of a task asks of one worker.
type Need struct {
	Cpus  int32 // slots (0 = 1)
	MemMB int64 // MiB (0: none)
	GPUs  int32 // GPUs (0: none)
}

// Holds reports whether a worker of capacity c (or a pool's pilot) could
// hold a copy of a task that asks for n when it is idle. With no worker up
// and no pool it reports true: workers may yet come. A pool's pilots
// count for slots only, and while a pool reports, memory and GPUs are not
// held against the workers (a pilot does not say its memory, and asks its
// batch system for the GPUs queued tasks need).
func (c Capacity) Holds(n Need) bool {
	if c.Workers == 0 && !c.Pool {
		return true
	}
	return int(max(n.Cpus, 1)) <= max(c.MaxSlots, c.PilotSlots) && (c.Pool || (n.MemMB <= c.MaxMemoryMB && n.GPUs <= c.MaxGPUs))
}

// Refuse is nil when c holds a task asking for n (Holds), else
// EFAILEDPRECONDITION naming the largest worker's size: no worker could
// ever run such a task, which would otherwise wait forever.
func (c Capacity) Refuse(n Need) error {
	if c.Holds(n) {
		return nil
	}
	asks := []string{plural(int(max(n.Cpus, 1)), "slot")}
	if n.MemMB > 0 {
		asks = append(asks, mib(n.MemMB))
	}
	if n.GPUs > 0 {
		asks = append(asks, plural(int(n.GPUs), "GPU"))
	}
	hasList := []string{plural(c.MaxSlots, "slot"), mib(c.MaxMemoryMB)}
	if n.GPUs > 0 {
		hasList = append(hasList, plural(int(c.MaxGPUs), "GPU"))
	}
	has := "the largest worker up has " + andList(hasList)
	if c.Pool {
		has = "the largest worker up or pilot of a pool has " + plural(max(c.MaxSlots, c.PilotSlots), "slot")
	}
	return Errorf(EFAILEDPRECONDITION, "a task asks for %s of one worker, but %s: no worker could ever run it; ask for less, or add a bigger worker first", andList(asks), has)
}

// andList joins items as "a", "a and b" or "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// plural is "1 slot" or "n slots".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// mib formats MiB as "512 MiB" or "24 GiB" ("no memory" for 0).
func mib(n int64) string {
	switch {
	case n == 0:
		return "no memory"
	case n%1024 == 0:
		return strconv.FormatInt(n/1024, 10) + " GiB"
	}
	return strconv.FormatInt(n, 10) + " MiB"
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
