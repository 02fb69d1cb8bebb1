package store

import (
	"context"
	"fmt"

	"batchd/sched"
)

// freePartSQL classifies an ended copy c of task t into its part of free
// work (sched.FreeParts), or the empty string when it is not free (a winner of a
// requested task, the copy a canceled requested task is billed for, or a
// copy still live). One expression serves the bill's totals and the live
// metrics, so the two cannot disagree on a name. A copy of an earlier
// attempt is judged by how that attempt ended (a, joined by attemptJoin):
// a failed requested attempt was billed, a disclosed one that executed and
// was retried before its request is free.
const freePartSQL = `CASE
	WHEN c.state = 'won' AND COALESCE(a.state, t.state) IN ('executed', 'canceled') THEN 'executed_unrequested'
	WHEN c.state = 'lost' THEN 'lost_with_worker'
	WHEN c.state != 'killed' THEN ''
	WHEN EXISTS (SELECT 1 FROM bill_lines b WHERE b.set_id = c.set_id AND b.idx = c.idx AND b.kind = 'charge' AND b.copy_id = c.id) THEN ''
	WHEN COALESCE(a.win_copy, t.win_copy) NOT IN (0, c.id) THEN 'speculative_lost'
	WHEN COALESCE(a.state, t.state) = 'canceled' THEN 'canceled'
	ELSE 'speculative_lost' END`

// attemptJoin joins the ended attempt a copy c ran for, if it is not its
// task's current attempt, for freePartSQL.
const attemptJoin = ` LEFT JOIN task_attempts a ON a.set_id = c.set_id AND a.idx = c.idx AND a.attempt = c.attempt`

// copyFreePart returns the part of free work copy id's run time counts in
// now, "" when none.
func copyFreePart(ctx context.Context, tx *Tx, id sched.CopyID) (sched.FreePart, error) {
	var p string
	if err := tx.QueryRowContext(ctx, `SELECT `+freePartSQL+` FROM copies c JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx`+attemptJoin+`
		WHERE c.id = ?`, id).Scan(&p); err != nil {
		return "", fmt.Errorf("classify copy %d: %w", id, err)
	}
	return sched.FreePart(p), nil
}
