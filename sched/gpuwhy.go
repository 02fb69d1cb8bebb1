package sched

import "fmt"

// This file is what Why says of a task that waits for GPUs: no worker up
// that may run it has as many GPUs as it asks for (WhyNeverFits), or none
// has them free now (WhyResources). The reason's own text names slots and
// memory; the detail says GPUs, with the numbers.

// gpuDetail is Why's detail when GPUs hold t back, "" when they do not (t
// asks for none, or a worker that may run it has them). never asks whether
// any worker has that many at all, else whether one has them free now.
func (s *Scheduler) gpuDetail(t *task, never bool) string {
	if t.gpus == 0 {
		return ""
	}
	need := int32(t.gpus)
	most, mostFree := int32(0), int32(0)
	for _, w := range s.wheap.items { // maxima: the order does not matter
		if w.slots == 0 || !w.allows(t) {
			continue
		}
		most, mostFree = max(most, w.gpus), max(mostFree, w.gpus-w.gpuUsed)
	}
	if never {
		if most >= need {
			return ""
		}
		return fmt.Sprintf("waiting for GPUs: it asks for %s of one worker, and no worker up has that many (the most is %d): it starts only if a worker with enough GPUs registers",
			plural(int(need), "GPU"), most)
	}
	if mostFree >= need {
		return ""
	}
	return fmt.Sprintf("waiting for GPUs: it asks for %s of one worker, and no worker has that many free now (the most free on one is %d)",
		plural(int(need), "GPU"), mostFree)
}

// PoolGPUDetail is Why's detail for a task that no worker up fits but a
// pool's pilot could (the server answers WhyResources): when GPUs were
// what no worker had (detail, from Why, says so), it says a pilot may
// bring them; else "".
func PoolGPUDetail(gpus int32, detail string) string {
	if gpus == 0 || detail == "" {
		return ""
	}
	return fmt.Sprintf("waiting for GPUs: no worker up has %s; a pool may start a pilot that asks for them", plural(int(gpus), "GPU"))
}
