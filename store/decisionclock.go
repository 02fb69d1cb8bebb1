// The scheduler's clock in the store's record of copies: a copy's start
// and end as the scheduler saw them.

package store

import (
	"context"
	"time"

	"batchd/sched"
)

// The store stamps what a transaction writes with the time the transaction
// began. The scheduler has its own clock: it decides at a time its caller
// read before the transaction, and it hears of copies' ends once their
// report batch is written. Under load the two part by a write's wait and
// duration, and a copy's record (started_at, ended_at: the trace a replay
// runs, and the latency it learns) would then not be the copy the
// scheduler judged: its latency estimate (sched/lag.go) learns from its own
// clock. So the decisions' writes take the decision's time, and the
// scheduler hears of ends at the time the store stamped them.

// ApplyDecisionsHeardAt is ApplyDecisions with the decisions stamped at,
// the time the scheduler made them (a started copy's started_at, a killed
// copy's end). In the same transaction it records that the scheduler
// heard the requests heard at that time: a request is stamped when its
// write began, and heard once the API batch that carried it committed
// (requestheard.go). With no decisions it writes nothing, heard or not: a
// request that started nothing when it was heard found no slot it could
// take, and a replay that hears it at its stamp starts it at the same
// later event.
func (db *DB) ApplyDecisionsHeardAt(ctx context.Context, at time.Time, ds []sched.Decision, heard []RequestHeard) ([]Started, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	var started []Started
	err := db.write(ctx, func(tx *Tx) (err error) {
		tx.now = at.UTC()
		if started, err = applyDecisions(ctx, tx, ds); err != nil {
			return err
		}
		return recordHeard(ctx, tx, heard)
	})
	if err != nil {
		return nil, err
	}
	return started, nil
}

// FinishThenDecideAt is FinishThenDecide whose decide is given the time the
// ends are stamped with: the scheduler hears of them, and decides, at
// that time, and its decisions are stamped with it.
func (db *DB) FinishThenDecideAt(ctx context.Context, ins []FinishInput, decide func(now time.Time, outs []FinishOutcome) []sched.Decision) (outs []FinishOutcome, ds []sched.Decision, started []Started, decErr, err error) {
	outs = make([]FinishOutcome, len(ins))
	err = db.writeFinish(ctx, ins, func(tx *Tx, ins []FinishInput) error {
		if err := finishCopiesTx(ctx, tx, ins, outs); err != nil {
			return err
		}
		ds = decide(tx.now, outs)
		if len(ds) == 0 {
			return nil
		}
		// A savepoint, so that decisions that cannot be recorded leave the
		// ends committed.
		if _, err := tx.ExecContext(ctx, "SAVEPOINT decisions"); err != nil {
			return err
		}
		started, decErr = applyDecisions(ctx, tx, ds)
		if decErr != nil {
			started = nil
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO decisions"); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "RELEASE decisions")
		return err
	})
	if err != nil {
		return nil, ds, nil, nil, err
	}
	return outs, ds, started, decErr, nil
}
