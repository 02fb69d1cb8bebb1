// Hold and release, and changing a set in place: a held task starts no
// copy until released (its running copies go on, or are suspended by the
// scheduler's decisions); an update changes a set's cap, timeout, retry
// policy or stop rule without disclosing anything.

package store

import (
	"context"
	"errors"
	"fmt"

	"batchd/sched"
)

// HoldInput names tasks of a set to hold or release: Indexes, or All
// (every task of the set that needs a run).
type HoldInput struct {
	Owner   string
	SetID   sched.SetID
	Indexes []int32
	All     bool
}

// HoldResult is what a Hold or Release did.
type HoldResult struct {
	Set sched.TaskSet
	// Changed counts the tasks held (or released) by the call; Unchanged
	// those that were already, or need no run.
	Changed, Unchanged int32
	// Indexes are the tasks the call changed (nil with All).
	Indexes []int32
}

// Hold holds the named tasks of the owner's set (or All): they start no
// copy until released. Tasks that need no run, or are held already, are
// counted as unchanged. Errors: EINVALID (nothing named, or tasks named
// and All), ENOTFOUND (no such set or task).
func (db *DB) Hold(ctx context.Context, in HoldInput) (HoldResult, error) {
	return db.setHeld(ctx, in, true)
}

// Release releases held tasks of the owner's set, as Hold names them.
func (db *DB) Release(ctx context.Context, in HoldInput) (HoldResult, error) {
	return db.setHeld(ctx, in, false)
}

func (db *DB) setHeld(ctx context.Context, in HoldInput, held bool) (HoldResult, error) {
	var res HoldResult
	if err := sched.CheckNamedOrAll(len(in.Indexes), in.All); err != nil {
		return res, err
	}
	err := db.write(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.SetID)
		if err != nil {
			return err
		}
		if in.All {
			r, err := tx.ExecContext(ctx, `UPDATE tasks SET held = ? WHERE set_id = ? AND state IN ('disclosed', 'requested') AND held = ?`,
				boolInt(held), in.SetID, boolInt(!held))
			if err != nil {
				return fmt.Errorf("hold tasks: %w", err)
			}
			n, _ := r.RowsAffected()
			res.Changed = int32(n)
			res.Unchanged = int32(set.Counts.Total - n)
		} else {
			seen := make(map[int32]bool, len(in.Indexes))
			rctx := rowCtx(ctx)
			for _, i := range in.Indexes {
				if seen[i] {
					continue
				}
				seen[i] = true
				state, err := taskState(rctx, tx, set, i)
				if err != nil {
					return err
				}
				if state != sched.TaskDisclosed && state != sched.TaskRequested {
					res.Unchanged++
					continue
				}
				r, err := tx.ExecContext(rctx, `UPDATE tasks SET held = ? WHERE set_id = ? AND idx = ? AND held = ?`, boolInt(held), in.SetID, i, boolInt(!held))
				if err != nil {
					return fmt.Errorf("hold task: %w", err)
				}
				if n, _ := r.RowsAffected(); n == 0 {
					res.Unchanged++
					continue
				}
				res.Changed++
				res.Indexes = append(res.Indexes, i)
			}
		}
		res.Set, err = getSet(ctx, tx, in.Owner, in.SetID)
		return err
	})
	return res, err
}

// UpdateInput changes a set in place; a nil field leaves its part as it
// is.
type UpdateInput struct {
	Owner string
	SetID sched.SetID
	// MaxRunning is the new cap (0: none).
	MaxRunning *int32
	// TimeoutSeconds replaces the tasks' own timeouts for copies started
	// from now on (0: each task's own again).
	TimeoutSeconds *float64
	Retry          *sched.RetryPolicy
	// Stop is the new stop rule (zero: none). A rule that fired stays
	// fired.
	Stop *sched.StopRule
}

// Changes reports whether in changes anything.
func (in UpdateInput) Changes() bool {
	return in.MaxRunning != nil || in.TimeoutSeconds != nil || in.Retry != nil || in.Stop != nil
}

// UpdateSet changes the owner's set in place, in one transaction. Errors:
// EINVALID (nothing to change, or a bad value), ENOTFOUND (no such set).
func (db *DB) UpdateSet(ctx context.Context, in UpdateInput) (sched.TaskSet, error) {
	var set sched.TaskSet
	if !in.Changes() {
		return set, sched.Errorf(sched.EINVALID, "nothing to change: give a cap, a timeout, a retry policy or a stop rule")
	}
	var errs []error
	if in.MaxRunning != nil && *in.MaxRunning < 0 {
		errs = append(errs, sched.Errorf(sched.EINVALID, "max running %d is negative (0 means no cap)", *in.MaxRunning))
	}
	if t := in.TimeoutSeconds; t != nil && (!(*t >= 0) || *t > 1e9) {
		errs = append(errs, sched.Errorf(sched.EINVALID, "timeout %v seconds: give 0 (the tasks' own) or a positive number of seconds", *t))
	}
	if in.Retry != nil {
		errs = append(errs, in.Retry.Validate())
	}
	if in.Stop != nil {
		errs = append(errs, in.Stop.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return set, err
	}
	err := db.write(ctx, func(tx *Tx) error {
		if _, err := getSet(ctx, tx, in.Owner, in.SetID); err != nil {
			return err
		}
		if in.MaxRunning != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET max_running = ? WHERE id = ?`, *in.MaxRunning, in.SetID); err != nil {
				return fmt.Errorf("update cap: %w", err)
			}
		}
		if in.TimeoutSeconds != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET timeout_seconds = ? WHERE id = ?`, *in.TimeoutSeconds, in.SetID); err != nil {
				return fmt.Errorf("update timeout: %w", err)
			}
		}
		if in.Retry != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET retries = ?, retry_on = ? WHERE id = ?`, in.Retry.Retries, in.Retry.RetryOn(), in.SetID); err != nil {
				return fmt.Errorf("update retry policy: %w", err)
			}
		}
		if in.Stop != nil {
			if err := setStopRule(ctx, tx, in.SetID, *in.Stop); err != nil {
				return err
			}
		}
		var err error
		set, err = getSet(ctx, tx, in.Owner, in.SetID)
		return err
	})
	return set, err
}
