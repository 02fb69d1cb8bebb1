package store

import (
	"context"
	"fmt"

	"batchd/sched"
)

// The billed run time of a copy is what its worker reports, but never more
// than what the server saw: from the decision that started the copy to the
// report, less the time the copy spent suspended on the server's order,
// plus an allowance for clock skew and for the delivery of orders and
// reports (ClampAllowance). A worker token's report alone cannot raise a
// bill beyond that.

// ClampAllowance returns the slack granted over an observed run of
// observed seconds: max(1 s, 1%).
func ClampAllowance(observed float64) float64 { return max(1, observed/100) }

// clampRun returns the run seconds to bill for a report of reported
// seconds when the server observed observed seconds, and whether the
// report was cut.
func clampRun(reported, observed float64) (float64, bool) {
	limit := max(0, observed) + ClampAllowance(max(0, observed))
	if reported > limit {
		return limit, true
	}
	return reported, false
}

// observedRun is how long, by the server's clock, a copy has been running
// at now since the decision that started it (started_at): less the
// suspensions the server ordered, finished ones (suspended seconds) and
// one still under way (since suspendedAt, 0 for none). Times in ns.
func observedRun(now, started int64, suspended float64, suspendedAt int64) float64 {
	if suspendedAt > 0 {
		suspended += max(0, float64(now-suspendedAt)/1e9)
	}
	return max(0, float64(now-started)/1e9-suspended)
}

// markSuspension starts (suspended) or ends the suspension clock of copy id
// at the transaction's time. Starting one already under way, or ending
// none, does nothing.
func markSuspension(ctx context.Context, tx *Tx, id sched.CopyID, suspended bool) error {
	now := nanos(tx.now)
	q := `UPDATE copies SET suspended_seconds = suspended_seconds + MAX(0, (? - suspended_at) / 1e9), suspended_at = 0
		WHERE id = ? AND suspended_at > 0`
	if suspended {
		q = `UPDATE copies SET suspended_at = MAX(?, 1) WHERE id = ? AND suspended_at = 0`
	}
	if _, err := tx.ExecContext(ctx, q, now, id); err != nil {
		return fmt.Errorf("mark suspension of copy %d: %w", id, err)
	}
	return nil
}
