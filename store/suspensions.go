// The suspension clocks of a task's copies, for a task's own view.

package store

import (
	"context"
	"fmt"
	"time"

	"batchd/sched"
)

// Suspension is how a copy was held suspended on the server's order.
type Suspension struct {
	// Since is when the suspension under way began (zero when none is).
	Since time.Time
	// Seconds is the time spent in suspensions that ended.
	Seconds float64
}

// TaskDetail is GetTask with the suspension clocks of the task's copies
// (every attempt's), by copy, read in one transaction. Copies never
// suspended are left out. Errors: ENOTFOUND.
func (db *DB) TaskDetail(ctx context.Context, owner string, ref sched.TaskRef) (sched.TaskSet, sched.Task, map[sched.CopyID]Suspension, error) {
	var (
		set sched.TaskSet
		t   sched.Task
		sus map[sched.CopyID]Suspension
	)
	err := db.read(ctx, func(tx *Tx) error {
		var err error
		if set, t, err = getTask(ctx, tx, owner, ref); err != nil {
			return err
		}
		sus, err = copySuspensions(ctx, tx, ref)
		return err
	})
	return set, t, sus, err
}

// copySuspensions reads the suspension clocks of a task's copies.
func copySuspensions(ctx context.Context, tx *Tx, ref sched.TaskRef) (map[sched.CopyID]Suspension, error) {
	out := map[sched.CopyID]Suspension{}
	rows, err := tx.QueryContext(ctx, `SELECT id, suspended_at, suspended_seconds FROM copies
		WHERE set_id = ? AND idx = ? AND (suspended_at > 0 OR suspended_seconds > 0) ORDER BY id`, ref.Set, ref.Index)
	if err != nil {
		return nil, fmt.Errorf("read the suspensions of task %d/%d: %w", ref.Set, ref.Index, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id    sched.CopyID
			since int64
			secs  float64
		)
		if err := rows.Scan(&id, &since, &secs); err != nil {
			return nil, err
		}
		out[id] = Suspension{Since: fromNanos(since), Seconds: secs}
	}
	return out, rows.Err()
}
