// Recording the scheduler's decisions: copies started, killed, suspended and resumed.

package store

import (
	"context"
	"fmt"
	"time"

	"batchd/sched"
)

// Started is a copy a Start decision created, with what its worker needs.
type Started struct {
	Decision sched.Decision
	Spec     sched.TaskSpec
	Owner    string
	Attempt  int32 // the attempt of the task it runs for
	// Known is what the copy's end needs of it (FinishInput.Known).
	Known FinishKnown
}

// ApplyDecisions records the scheduler's decisions in one transaction
// before the driver carries them out: a Start becomes a running copy row, a
// Kill ends a live copy as killed (its run time so far, by the server's
// clock, until the worker reports its own), a Suspend and a Resume change
// its state (and its suspension clock, which the bill of its run leaves
// out). It returns the started copies with their specs; a copy's
// started_at is the time of the decision that started it.
func (db *DB) ApplyDecisions(ctx context.Context, ds []sched.Decision) ([]Started, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	var started []Started
	err := db.write(ctx, func(tx *Tx) (err error) {
		started, err = applyDecisions(ctx, tx, ds)
		return err
	})
	if err != nil {
		return nil, err
	}
	return started, nil
}

// applyDecisions is ApplyDecisions inside tx, in ds's order; a run of
// starts is recorded at once (startCopies).
func applyDecisions(ctx context.Context, tx *Tx, ds []sched.Decision) ([]Started, error) {
	now := nanos(tx.now)
	var starts []sched.Decision
	var out []Started
	flush := func() error {
		if len(starts) == 0 {
			return nil
		}
		st, err := startCopies(ctx, tx, starts)
		out, starts = append(out, st...), starts[:0]
		return err
	}
	for _, d := range ds {
		if d.Kind == sched.DecisionStart {
			starts = append(starts, d)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		var err error
		switch d.Kind {
		case sched.DecisionKill:
			_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'killed', ended_at = ?, run_seconds = MAX(0, (? - started_at) / 1e9)
				WHERE id = ? AND state IN ('running', 'suspended')`, now, now, d.Copy)
			tx.markFreeCopy(d.Copy)
		case sched.DecisionSuspend:
			_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'suspended' WHERE id = ? AND state = 'running'`, d.Copy)
			if err == nil {
				err = markSuspension(ctx, tx, d.Copy, true)
			}
		case sched.DecisionResume:
			// It may resume on another slot than the one it gave up.
			_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'running', slot = ? WHERE id = ? AND state = 'suspended'`, d.Slot.Slot, d.Copy)
			if err == nil {
				err = markSuspension(ctx, tx, d.Copy, false)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("record decision %d on copy %d: %w", d.Kind, d.Copy, translate(err))
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// FinishThenDecide records reports' ends and then, in the same
// transaction, the decisions that decide returns. decide runs inside the
// transaction once the ends are written, with their outcomes, so that the
// scheduler can hear of them and decide (the caller's lock keeps the
// scheduler and the store in step). One commit instead of two per batch:
// a slot's way from one copy's end to its next copy's start commits once.
//
// If the decisions cannot be recorded, the ends are committed without them
// and decErr says why (the caller treats the started copies as lost, as
// when ApplyDecisions fails). An error, the transaction's own, means that
// nothing was committed, decisions included, although decide ran.
func (db *DB) FinishThenDecide(ctx context.Context, ins []FinishInput, decide func([]FinishOutcome) []sched.Decision) (outs []FinishOutcome, ds []sched.Decision, started []Started, decErr, err error) {
	return db.FinishThenDecideAt(ctx, ins, func(_ time.Time, outs []FinishOutcome) []sched.Decision { return decide(outs) })
}
