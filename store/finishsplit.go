package store

import (
	"context"

	"batchd/sched"
)

// finishSplit records a group commit's ends that finishWinners refused as
// a whole (one killed copy, one with kept files or big output, a second
// end of the same task): the ends finishWinners takes go through it, the
// others one by one after them, as finishCopy records them. It reports
// whether it did; when it did not, it wrote nothing.
//
// Under speculation a killed loser or a second copy's end is in many
// groups, and each sent its whole group down the path of one read and
// about ten statements per end: 8% of the server's CPU at 64 local slots
// (profile at 581d03e, load 0.4).
//
// Order: an end goes to the batch only if it is the first of its task in
// the group, so each task's ends keep their order (its batched end, then
// the rest in the order they came); the ends of different tasks touch
// different rows, apart from the set's counts, which add up alike in any
// order. The tasks are known only from the server's memory (Known): a
// group without it for every end is left to the caller.
func finishSplit(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) (bool, error) {
	seen := make(map[sched.TaskRef]bool, len(ins))
	batch := make([]int, 0, len(ins))
	for i, in := range ins {
		if in.Known == nil {
			return false, nil
		}
		first := !seen[in.Known.Task]
		seen[in.Known.Task] = true
		if first && batchable(in) {
			batch = append(batch, i)
		}
	}
	if len(batch) == 0 || len(batch) == len(ins) {
		return false, nil // nothing to split off, or finishWinners refused all for another reason
	}
	bins := make([]FinishInput, len(batch))
	for j, i := range batch {
		bins[j] = ins[i]
	}
	bout := make([]FinishOutcome, len(batch))
	if done, err := finishWinners(ctx, tx, bins, bout); !done || err != nil {
		return false, err
	}
	inBatch := make([]bool, len(ins))
	for j, i := range batch {
		out[i], inBatch[i] = bout[j], true
	}
	for i, in := range ins {
		if inBatch[i] {
			continue
		}
		if err := finishOne(ctx, tx, in, &out[i]); err != nil {
			return true, err
		}
	}
	return true, nil
}
