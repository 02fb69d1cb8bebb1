package sched

import "slices"

// This file is resource requests: a task may ask for several slots of one
// worker (--cpus N) and for memory (--memory), matched against the memory
// its worker advertises.
//
// Slots stay the unit everywhere: a copy of an N-cpu task holds N slots of
// one worker (its own slot and N−1 extra ones), Hopper counts a job's
// unfinished work and its share in slots, and GRASS fills a share slot by
// slot. Memory is a second capacity per worker: the copies running there
// may ask for at most what it advertises; a worker that advertises none
// runs no task that asks for memory. Both are accounted here, not
// enforced: the worker agent enforces them with cgroups where it can (see
// the README).
//
// Placement: a task that asks for one slot and no memory takes the worker
// with the most free slots, as before (O(log workers)). Any other walks
// the worker heap best-first, skipping the workers without room, so its
// cost grows with the workers that have enough free slots but not the
// memory. A requested one that finds no room preempts (preemptFor): on the
// first worker, by id, where its free room and the room of its running
// disclosed copies together fit the task, it suspends (or kills) those
// copies, most recently started first, until the task fits (O(workers +
// that worker's slots), only when a task finds no room). Where that cannot
// make room either (preemption off, or requested copies hold it), disclosed
// work does not take the slots that free while the task waits
// (holdForResources), so the room builds up and requested work does not
// starve behind disclosed work.

// MaxCpus and MaxMemoryMB bound a task's request.
const (
	MaxCpus     = 1 << 12
	MaxMemoryMB = 1 << 30
)

// slots is how many slots a copy of t takes.
func (t *task) slots() int {
	if t.cpus > 1 {
		return int(t.cpus)
	}
	return 1
}

// plain reports whether t asks for one slot, no memory and no GPU, and
// may run on any worker (no route: route.go).
func (t *task) plain() bool { return t.cpus <= 1 && t.memMB == 0 && t.gpus == 0 && !t.routed() }

// slots is how many slots c holds (or held before it was suspended).
func (c *liveCopy) slots() int { return 1 + int(c.nextra) }

// fits reports whether w has room for a copy of t now.
func (w *worker) fits(t *task) bool {
	if w.free() < t.slots() || !w.allows(t) {
		return false
	}
	return (t.memMB == 0 || w.memMB-w.memUsed >= int64(t.memMB)) && w.gpuFits(t)
}

// couldFit reports whether w could hold a copy of t when idle.
func (w *worker) couldFit(t *task) bool {
	return int(w.slots) >= t.slots() && (t.memMB == 0 || w.memMB >= int64(t.memMB)) && int32(t.gpus) <= w.gpus && w.allows(t)
}

// takeExtra gives running copy c, just put on one slot of w, the rest of
// the slots its task asks for (its memory is counted from its start to its
// end, suspended or not: see startCopy and endCopy). A copy re-attached after a
// restart on a worker with fewer free slots takes what there is.
func (s *Scheduler) takeExtra(c *liveCopy, w *worker) {
	t := c.task
	for k := 1; k < t.slots() && w.free() > 0; k++ {
		x := w.freeSlots.pop()
		w.busy[x] = c
		c.nextra++
		s.freeN--
	}
}

// releaseSlot frees slot x of w if c holds it.
func (s *Scheduler) releaseSlot(w *worker, c *liveCopy, x int32) {
	if int(x) < len(w.busy) && w.busy[x] == c {
		w.busy[x] = nil
		if x < w.slots {
			w.freeSlots.push(x)
			s.freeN++
		}
	}
}

// fit returns the worker with the most free slots that has room for a
// copy of t and is not in avoid, or nil. It explores the heap best-first
// and prunes below a worker with fewer free slots than t asks for.
func (h *workerHeap) fit(avoid []*worker, t *task) *worker {
	need := t.slots()
	if len(h.items) == 0 || h.items[0].free() < need {
		return nil
	}
	frontier := make([]int, 0, 8)
	frontier = append(frontier, 0)
	for len(frontier) > 0 {
		bi := 0
		for k := 1; k < len(frontier); k++ {
			if workerBefore(h.items[frontier[k]], h.items[frontier[bi]]) {
				bi = k
			}
		}
		i := frontier[bi]
		frontier[bi] = frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		w := h.items[i]
		if w.free() < need {
			continue
		}
		if w.fits(t) && !containsWorker(avoid, w) {
			return w
		}
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				frontier = append(frontier, c)
			}
		}
	}
	return nil
}

// anyCouldFit reports whether some worker could hold a copy of t when
// idle (O(workers); asked only for a task that found no room).
func (s *Scheduler) anyCouldFit(t *task) bool {
	for _, w := range s.wheap.items {
		if w.couldFit(t) {
			return true
		}
	}
	return false
}

// blockedOnResources notes that requested task t found no room: when some
// worker could hold it, disclosed work leaves the free slots alone for the
// rest of this Decide (see the file comment). A routed task holds nothing
// back (route.go): most free slots may be off its route.
func (s *Scheduler) blockedOnResources(t *task) {
	if !t.plain() && !t.routed() && s.anyCouldFit(t) {
		s.holdForResources = true
	}
}

// setAside takes queued requested task t out of its queue until
// restoreAside: no worker has room for it now, and the tasks behind it
// may fit.
func (s *Scheduler) setAside(t *task) {
	t.set.rq.remove(t)
	s.aside = append(s.aside, t)
}

// restoreAside puts the tasks set aside back in their queues.
func (s *Scheduler) restoreAside() {
	for i, t := range s.aside {
		if t.qpos < 0 && !t.done() && t.running() == 0 {
			t.set.rq.push(t)
			s.updateUnder(t.set)
		}
		s.aside[i] = nil
	}
	s.aside = s.aside[:0]
}

// moveExtra moves extra slot x of running copy o on w to another free
// slot of w, or gives it up when none is free (o then holds fewer slots
// than its task asks for, as a copy re-attached on a full worker does).
// Extra slots are the scheduler's accounting only: a worker knows a copy
// by its own slot, so a restore that meets a copy on a slot taken as
// another's extra makes room this way.
func (s *Scheduler) moveExtra(w *worker, o *liveCopy, x int32) {
	if w.busy[x] != o || o.slot == x {
		return
	}
	w.busy[x] = nil
	if w.free() > 0 {
		y := w.freeSlots.pop()
		w.busy[y] = o
		s.wheap.update(w)
		return
	}
	o.nextra--
	s.busy--
	if s.reqClass(o.task) {
		o.task.set.held--
		s.updateUnder(o.task.set)
	}
	// x is free again; the caller takes it at once.
	w.freeSlots.push(x)
	s.freeN++
	s.wheap.update(w)
}

// preemptFor makes room for requested task t by preempting disclosed
// copies on one worker (see the file comment); nil when no worker can give
// it room that way.
func (s *Scheduler) preemptFor(t *task, now Time, out *[]Decision) *worker {
	if len(s.preempt.items) == 0 {
		return nil
	}
	ws := slices.Clone(s.wheap.items)
	slices.SortFunc(ws, func(a, b *worker) int {
		if a.id < b.id {
			return -1
		} else if a.id > b.id {
			return 1
		}
		return 0
	})
	for _, w := range ws {
		if !w.couldFit(t) {
			continue
		}
		var cs []*liveCopy
		slots, mem, gpus := w.free(), w.memMB-w.memUsed, w.gpus-w.gpuUsed
		// A suspended copy keeps its memory: only a killed one gives it
		// back.
		kills := s.cfg.Preemption == PreemptKill || !w.canSuspend
		for i, c := range w.busy {
			if c != nil && int32(i) == c.slot && c.ppos >= 0 {
				cs = append(cs, c)
				slots += c.slots()
				if kills {
					mem += int64(c.task.memMB)
					gpus += int32(c.task.gpus)
				}
			}
		}
		if slots < t.slots() || (t.memMB > 0 && mem < int64(t.memMB)) || gpus < int32(t.gpus) {
			continue
		}
		slices.SortFunc(cs, func(a, b *liveCopy) int {
			if copyAfter(a, b) {
				return -1
			}
			return 1
		})
		for _, c := range cs {
			if w.fits(t) {
				break
			}
			s.preemptCopy(c, now, out)
		}
		if w.fits(t) {
			return w
		}
	}
	return nil
}
