// Stop rules in the store: a set's rule is kept on its row, and fires in
// the transaction that records the result of one of its tasks (the
// finish), cancelling the set's work that still needs a run there and
// then, as Cancel does.

package store

import (
	"context"
	"database/sql"
	"fmt"

	"batchd/sched"
)

// stopCols are the stop rule's columns of task_sets, in stopRow's order.
const stopCols = `stop_on_success, stop_on_exit, stop_on_output, stop_after, stopped_at, stopped_idx, stopped_attempt, stopped_why, stopped_canceled`

// stopRow is a set's stop rule and its firing as stored.
type stopRow struct {
	onSuccess                  int
	onExit, onOutput, why      string
	after                      int32
	stoppedAt                  int64
	stoppedIdx, stoppedAttempt int32
	canceled                   int64
}

// decode is the row as domain records (fired nil when the rule has not
// fired).
func (r stopRow) decode(set sched.SetID) (sched.StopRule, *sched.StopFired, error) {
	rule := sched.StopRule{OnSuccess: r.onSuccess != 0, OnOutput: r.onOutput, After: r.after}
	if r.onExit != "" {
		codes, err := sched.ParseStopOnExit(r.onExit)
		if err != nil {
			return rule, nil, fmt.Errorf("read set %d: stop rule exit codes %q: %w", set, r.onExit, err)
		}
		rule.OnExit = codes
	}
	if r.stoppedIdx < 0 {
		return rule, nil, nil
	}
	return rule, &sched.StopFired{Task: sched.TaskRef{Set: set, Index: r.stoppedIdx}, Attempt: r.stoppedAttempt,
		At: fromNanos(r.stoppedAt), Why: r.why, Canceled: r.canceled}, nil
}

// setStopRule replaces set's stop rule (which Validate accepted).
func setStopRule(ctx context.Context, tx *Tx, set sched.SetID, r sched.StopRule) error {
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET stop_on_success = ?, stop_on_exit = ?, stop_on_output = ?, stop_after = ? WHERE id = ?`,
		boolInt(r.OnSuccess), r.ExitCodes(), r.OnOutput, r.After, set); err != nil {
		return fmt.Errorf("set stop rule: %w", err)
	}
	return nil
}

// heldCountsSQL counts the held tasks that still need a run, per set, of
// the sets whose ids are the placeholders in (each "?"): (set_id, count)
// rows, none for a set with no held task. It reads the partial index of
// held tasks (migration 0021), which is empty for most sets: without
// INDEXED BY the planner took the tasks' primary key and read every task
// of the set, every time a set was read (each watch event, each page of
// sets), 20,000 rows for a set of 20,000 tasks.
func heldCountsSQL(in string) string {
	return `SELECT set_id, COUNT(*) FROM tasks INDEXED BY tasks_held WHERE set_id IN (` + in +
		`) AND held = 1 AND state IN ('disclosed', 'requested') GROUP BY set_id`
}

// countHeld counts set's held tasks that still need a run.
func countHeld(ctx context.Context, tx *Tx, set sched.SetID) (int64, error) {
	var id, n int64
	err := tx.QueryRowContext(ctx, heldCountsSQL("?"), set).Scan(&id, &n)
	if err == sql.ErrNoRows {
		return 0, nil // no row: none held
	} else if err != nil {
		return 0, fmt.Errorf("count held tasks: %w", err)
	}
	return n, nil
}

// StopOutcome is what a fired stop rule did in a finish's transaction.
type StopOutcome struct {
	Fired sched.StopFired
	// Bills are the lines of requested tasks it stopped while a copy ran
	// (billed for what they used, as Cancel bills them).
	Bills []sched.BillLine
}

// applyStop checks set's stop rule against the result of the winning
// copy c (attempt of its task), in the finish's transaction, and when it
// fires cancels every task of the set that still needs a run. It returns
// nil when the set has no rule or it did not fire.
func applyStop(ctx context.Context, tx *Tx, c sched.Copy, attempt int32, in FinishInput) (*StopOutcome, error) {
	set := c.Task.Set
	var r stopRow
	var successes int64
	if err := tx.QueryRowContext(ctx, `SELECT stop_on_success, stop_on_exit, stop_on_output, stop_after, stopped_idx, successes
		FROM task_sets WHERE id = ?`, set).Scan(&r.onSuccess, &r.onExit, &r.onOutput, &r.after, &r.stoppedIdx, &successes); err != nil {
		return nil, fmt.Errorf("read stop rule of set %d: %w", set, err)
	}
	if r.stoppedIdx >= 0 {
		return nil, nil // it fires once
	}
	rule, _, err := r.decode(set)
	if err != nil || rule.IsZero() {
		return nil, err
	}
	res := sched.StopResult{ExitCode: in.ExitCode, TimedOut: in.TimedOut, Stdout: in.Stdout, Successes: successes}
	if res.Success() && rule.After > 0 {
		res.Successes++
		if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET successes = successes + 1 WHERE id = ?`, set); err != nil {
			return nil, fmt.Errorf("count successes: %w", err)
		}
	}
	why, fires := rule.Check(res)
	if !fires {
		return nil, nil
	}
	out := &StopOutcome{Fired: sched.StopFired{Task: c.Task, Attempt: attempt, At: tx.now, Why: why}}
	if err := stopRest(ctx, tx, set, out); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET stopped_at = ?, stopped_idx = ?, stopped_attempt = ?, stopped_why = ?, stopped_canceled = ?
		WHERE id = ?`, nanos(tx.now), c.Task.Index, attempt, why, out.Fired.Canceled, set); err != nil {
		return nil, fmt.Errorf("record stop of set %d: %w", set, err)
	}
	return out, nil
}

// stopRest cancels every task of set that still needs a run: the
// disclosed ones in one UPDATE (free), the requested ones one by one,
// each billed for what a running copy used (as Cancel does). Executed
// and finished tasks keep their results.
func stopRest(ctx context.Context, tx *Tx, id sched.SetID, out *StopOutcome) error {
	now := nanos(tx.now)
	// The disclosed tasks in one statement, their set's counts once
	// (count_pause, migration 0021), not once a row.
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 1`); err != nil {
		return fmt.Errorf("pause counts: %w", err)
	}
	r, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND state = 'disclosed'`, now, id)
	if err != nil {
		return fmt.Errorf("stop disclosed tasks: %w", err)
	}
	tx.markFreeSet(id)
	n, _ := r.RowsAffected()
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET n_disclosed = n_disclosed - ?1, n_canceled = n_canceled + ?1 WHERE id = ?2`, n, id); err != nil {
		return fmt.Errorf("count stopped tasks: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 0`); err != nil {
		return fmt.Errorf("resume counts: %w", err)
	}
	out.Fired.Canceled = n
	requested, err := indexesIn(ctx, tx, id, sched.TaskRequested)
	if err != nil || len(requested) == 0 {
		return err
	}
	var set sched.TaskSet
	if err := tx.QueryRowContext(ctx, `SELECT owner, name FROM task_sets WHERE id = ?`, id).Scan(&set.Owner, &set.Name); err != nil {
		return fmt.Errorf("read set %d: %w", id, err)
	}
	set.ID = id
	var cr CancelResult
	for _, i := range requested {
		if err := stopRequested(ctx, tx, set, i, &cr); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND idx = ?`, now, id, i); err != nil {
			return fmt.Errorf("stop task: %w", err)
		}
		tx.markFreeTask(sched.TaskRef{Set: id, Index: i})
	}
	out.Fired.Canceled += int64(len(requested))
	out.Bills = cr.Bills
	return nil
}
