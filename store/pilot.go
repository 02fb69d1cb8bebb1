package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"batchd/sched"
)

// This file is what the store keeps of pilots (migration 0023): workers
// that a batch system ends. A pilot says when it stops taking copies
// (ends_at) and that it hands its copies back when it ends (hand_back);
// every copy such a worker loses, handed back or lost with its lease, is
// a loss to a pilot end, except the copies its goodbye shows it never
// started (RegisterInput.Stopping). Its first hand-back marks it
// stopping: it gets no copy after it. A task whose current attempt has lost
// PilotLossLimit copies so, with no copy of it left running, does not
// loop: it is canceled with a reason (fail_reason) that status and why
// show, and like any canceled task it can be retried.

// DefaultPilotLosses is the pilot-end losses after which a task fails
// when the server sets no other limit.
const DefaultPilotLosses = 3

// SetPilotLossLimit sets how many losses to pilot ends fail a task: 0
// means DefaultPilotLosses, a negative number never.
func (db *DB) SetPilotLossLimit(n int) {
	if n == 0 {
		n = DefaultPilotLosses
	}
	db.pilotLosses.Store(int32(max(n, -1)))
}

// pilotLossLimit is the limit SetPilotLossLimit set (DefaultPilotLosses
// before any call).
func (db *DB) pilotLossLimit() int32 {
	if n := db.pilotLosses.Load(); n != 0 {
		return n
	}
	return DefaultPilotLosses
}

// setWorkerPilot records a registering worker's end and hand-back mode.
func setWorkerPilot(ctx context.Context, tx *Tx, in RegisterInput) error {
	var ends int64
	if !in.EndsAt.IsZero() {
		ends = nanos(in.EndsAt)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workers SET ends_at = ?, hand_back = ?, left_at = 0 WHERE id = ?`,
		ends, boolInt(in.HandBack), in.Worker); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// PilotFailReason is why a task lost n times to pilot ends failed.
func PilotFailReason(n int32) string {
	return fmt.Sprintf("lost %d times to pilot ends (the batch system's time limit or preemption): "+
		"it may need more time than the pilots have; give it an estimate or longer pilots (pool --time), then retry it", n)
}

// pilotLost counts the loss of a copy of task ref on worker w when w is a
// pilot, and cancels the task with PilotFailReason when the count reaches
// the limit, the task still needs a run and none of its copies is live.
// It reports whether it canceled the task. Call it before lostAttempt,
// which then leaves the canceled task alone.
func (tx *Tx) pilotLost(ctx context.Context, w sched.WorkerID, ref sched.TaskRef) (bool, error) {
	limit := tx.pilotLimit
	var (
		n     int32
		state string
	)
	err := tx.QueryRowContext(ctx, `UPDATE tasks SET pilot_losses = pilot_losses + 1
		WHERE set_id = ? AND idx = ? AND (SELECT hand_back FROM workers WHERE id = ?) = 1 RETURNING pilot_losses, state`,
		ref.Set, ref.Index, w).Scan(&n, &state)
	if err == sql.ErrNoRows {
		return false, nil // not a pilot's
	} else if err != nil {
		return false, fmt.Errorf("count pilot loss of task %d/%d: %w", ref.Set, ref.Index, err)
	}
	if limit < 0 || n < limit || (state != string(sched.TaskDisclosed) && state != string(sched.TaskRequested)) {
		return false, nil
	}
	var live int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM copies WHERE set_id = ? AND idx = ? AND state IN ('running', 'suspended')`,
		ref.Set, ref.Index).Scan(&live); err != nil {
		return false, fmt.Errorf("count live copies of task %d/%d: %w", ref.Set, ref.Index, err)
	}
	if live > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ?, fail_reason = ? WHERE set_id = ? AND idx = ?`,
		nanos(tx.now), PilotFailReason(n), ref.Set, ref.Index); err != nil {
		return false, fmt.Errorf("fail task %d/%d: %w", ref.Set, ref.Index, err)
	}
	tx.markFreeTask(ref)
	return true, nil
}

// pilotStopping marks worker w, when it is a pilot, as taking no copy
// from now on (ends_at now, unless it was earlier), and reports whether
// it did. A pilot's copy reported killed without the server's order was
// handed back: the pilot is stopping, and a copy started there now would
// never run, yet its loss at the pilot's goodbye or lapse would count. A
// registration sets the end again.
func (tx *Tx) pilotStopping(ctx context.Context, w sched.WorkerID) (bool, error) {
	now := nanos(tx.now)
	r, err := tx.ExecContext(ctx, `UPDATE workers SET ends_at = ? WHERE id = ? AND hand_back = 1 AND (ends_at = 0 OR ends_at > ?)`,
		now, w, now)
	if err != nil {
		return false, fmt.Errorf("mark pilot %s stopping: %w", w, err)
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// FailedForPilots returns those of refs that losses to pilot ends
// canceled (their fail_reason is set and they are canceled), by set and
// index: what the scheduler must hear after a worker's copies were lost.
func (db *DB) FailedForPilots(ctx context.Context, refs []sched.TaskRef) ([]sched.TaskRef, error) {
	var out []sched.TaskRef
	err := db.read(ctx, func(tx *Tx) error {
		seen := make(map[sched.TaskRef]bool, len(refs))
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			var failed int
			err := tx.QueryRowContext(ctx, `SELECT state = 'canceled' AND fail_reason != '' FROM tasks WHERE set_id = ? AND idx = ?`,
				ref.Set, ref.Index).Scan(&failed)
			if err == sql.ErrNoRows {
				continue
			} else if err != nil {
				return fmt.Errorf("read task %d/%d: %w", ref.Set, ref.Index, err)
			}
			if failed != 0 {
				out = append(out, ref)
			}
		}
		return nil
	})
	return out, err
}

// optTime reads a stored time that may be unset (0: the zero time).
func optTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromNanos(v)
}
