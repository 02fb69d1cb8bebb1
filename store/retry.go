package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"batchd/sched"
)

// This file holds retries in place (migration 0010): a task that failed,
// timed out or was canceled runs again as a new attempt of the same task.
// The tasks row always describes the current attempt; retryTask copies the
// row of the attempt that ended into task_attempts and its output into
// attempt_outputs first, in the same transaction as the retry.

// retryState is a task's retry budget and its set's policy, as stored.
type retryState struct {
	used, retries int32
	retryOn       string
}

// wants reports whether the policy retries an attempt that ended with
// exit (timedOut) and has budget left.
func (r retryState) wants(exit int32, timedOut bool) bool {
	if r.retries <= 0 || r.used >= r.retries {
		return false
	}
	p, err := sched.ParseRetryOn(r.retryOn)
	return err == nil && p.RetriesExit(exit, timedOut)
}

// retryTask archives the ended attempt of task ref and makes the task's
// row a new attempt in the class RetryClass gives (by says who retried;
// the policy's retries count against its budget). It returns what the
// scheduler must hear (EventRetried). The caller checked that the task
// may be retried.
func retryTask(ctx context.Context, tx *Tx, ref sched.TaskRef, by string) (sched.TaskInfo, error) {
	var (
		state   string
		reqAt   int64
		attempt int32
		info    = sched.TaskInfo{Index: ref.Index}
		noSpec  int
		held    int
	)
	// What the scheduler needs to queue the task anew if it no longer holds
	// it (it forgets closed sets, and a restart loads open tasks only).
	if err := tx.QueryRowContext(ctx, `SELECT state, requested_at, attempt, estimate, no_speculation, deadline, cpus, memory_mb, held, gpus FROM tasks WHERE set_id = ? AND idx = ?`, ref.Set, ref.Index).
		Scan(&state, &reqAt, &attempt, &info.EstimateSeconds, &noSpec, &info.DeadlineSeconds, &info.Cpus, &info.MemoryMB, &held, &info.GPUs); err != nil {
		return sched.TaskInfo{}, fmt.Errorf("retry task %d/%d: %w", ref.Set, ref.Index, err)
	}
	now := nanos(tx.now)
	tx.markFreeTask(ref)
	class := sched.RetryClass(sched.TaskState(state), reqAt != 0)
	if _, err := tx.ExecContext(ctx, `INSERT INTO task_attempts (set_id, idx, attempt, state, requested_at, executed_at, finished_at, canceled_at,
		win_copy, exit_code, timed_out, service_seconds, visible_response, retried_at, retried_by)
		SELECT set_id, idx, attempt, state, requested_at, executed_at, finished_at, canceled_at,
		win_copy, exit_code, timed_out, service_seconds, visible_response, ?, ? FROM tasks WHERE set_id = ? AND idx = ?`,
		now, by, ref.Set, ref.Index); err != nil {
		return sched.TaskInfo{}, fmt.Errorf("keep attempt %d of task %d/%d: %w", attempt, ref.Set, ref.Index, translate(err))
	}
	if state == string(sched.TaskExecuted) {
		// Its output stays unreadable (it ran while disclosed and was
		// never requested): its kept files would only take room.
		if err := dropKeptOfOutputs(ctx, tx, `o.set_id = ? AND o.idx = ?`, ref.Set, ref.Index); err != nil {
			return sched.TaskInfo{}, err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO attempt_outputs (set_id, idx, attempt, copy_id, worker, stdout, stderr, stdout_truncated,
		stderr_truncated, exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds)
		SELECT set_id, idx, ?, copy_id, worker, stdout, stderr, stdout_truncated,
		stderr_truncated, exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds FROM outputs WHERE set_id = ? AND idx = ?`,
		attempt, ref.Set, ref.Index); err != nil {
		return sched.TaskInfo{}, fmt.Errorf("keep output of attempt %d of task %d/%d: %w", attempt, ref.Set, ref.Index, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM outputs WHERE set_id = ? AND idx = ?`, ref.Set, ref.Index); err != nil {
		return sched.TaskInfo{}, fmt.Errorf("move output: %w", err)
	}
	// A held task stays held across its retries, until released.
	info.NoSpeculation, info.State, info.Held = noSpec != 0, class, held != 0
	newReq := int64(0)
	if class == sched.TaskRequested {
		// The retry is the new attempt's request: its visible response
		// time counts from now.
		newReq, info.RequestedAt = now, seconds(tx.now)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = ?, attempt = attempt + 1, auto_retries = auto_retries + ?, requested_at = ?,
		executed_at = 0, finished_at = 0, canceled_at = 0, win_copy = 0, exit_code = 0, timed_out = 0, service_seconds = 0, visible_response = 0,
		pilot_losses = 0, fail_reason = ''
		WHERE set_id = ? AND idx = ?`, string(class), boolInt(by == sched.RetriedByPolicy), newReq, ref.Set, ref.Index); err != nil {
		return info, fmt.Errorf("retry task %d/%d: %w", ref.Set, ref.Index, err)
	}
	return info, nil
}

// lostAttempt is called after a copy of task ref was lost: when that was
// the task's last live copy, the task still needs a run, and its set's
// policy retries on lost with budget left, the lost attempt is archived
// (state lost, nothing billed) and the re-run that follows anyway becomes
// the next attempt. The task stays queued as it was: the scheduler needs
// no word of it.
func lostAttempt(ctx context.Context, tx *Tx, ref sched.TaskRef) error {
	var (
		state string
		live  int
		rs    retryState
	)
	err := tx.QueryRowContext(ctx, `SELECT t.state, t.auto_retries, s.retries, s.retry_on,
		(SELECT COUNT(*) FROM copies c WHERE c.set_id = t.set_id AND c.idx = t.idx AND c.state IN ('running', 'suspended'))
		FROM tasks t JOIN task_sets s ON s.id = t.set_id WHERE t.set_id = ? AND t.idx = ?`, ref.Set, ref.Index).
		Scan(&state, &rs.used, &rs.retries, &rs.retryOn, &live)
	if err != nil {
		return fmt.Errorf("read task %d/%d after a loss: %w", ref.Set, ref.Index, err)
	}
	if live > 0 || (state != string(sched.TaskDisclosed) && state != string(sched.TaskRequested)) || rs.retries <= 0 || rs.used >= rs.retries {
		return nil
	}
	if p, err := sched.ParseRetryOn(rs.retryOn); err != nil || !p.Lost {
		return nil
	}
	now := nanos(tx.now)
	tx.markFreeTask(ref)
	if _, err := tx.ExecContext(ctx, `INSERT INTO task_attempts (set_id, idx, attempt, state, requested_at, retried_at, retried_by)
		SELECT set_id, idx, attempt, 'lost', requested_at, ?, 'policy' FROM tasks WHERE set_id = ? AND idx = ?`, now, ref.Set, ref.Index); err != nil {
		return fmt.Errorf("keep lost attempt of task %d/%d: %w", ref.Set, ref.Index, translate(err))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET attempt = attempt + 1, auto_retries = auto_retries + 1 WHERE set_id = ? AND idx = ?`,
		ref.Set, ref.Index); err != nil {
		return fmt.Errorf("next attempt of task %d/%d: %w", ref.Set, ref.Index, err)
	}
	return nil
}

// RetryInput is one Retry call: the named tasks, or with All every task of
// the set that failed, timed out or was canceled.
type RetryInput struct {
	Owner   string
	SetID   sched.SetID
	Indexes []int32
	All     bool
}

// RetryResult is what a Retry did.
type RetryResult struct {
	Set sched.TaskSet
	// Retried are the tasks retried, with the class each went back to:
	// what the scheduler must hear (EventRetried).
	Retried []sched.TaskInfo
	// Unchanged counts named tasks that did not fail (still running or
	// waiting, or finished with exit 0).
	Unchanged int32
	Tasks     []sched.Task // the named tasks after the call
	At        time.Time
}

// Retry runs failed, timed-out or canceled tasks again in place: same set,
// same index, the next attempt, in the class each had (a task that was
// requested is requested again; retried by the user, they do not count
// against the set's retry policy). Earlier attempts and their outputs are
// kept. Errors: EINVALID (nothing named, or tasks named and All), ENOTFOUND
// (no such set or task), EFAILEDPRECONDITION (the one task named did not
// fail).
func (db *DB) Retry(ctx context.Context, in RetryInput) (RetryResult, error) {
	var res RetryResult
	if err := sched.CheckNamedOrAll(len(in.Indexes), in.All); err != nil {
		return res, err
	}
	err := db.write(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.SetID)
		if err != nil {
			return err
		}
		res.At = tx.now
		var todo []int32
		if in.All {
			if todo, err = retryableIn(ctx, tx, in.SetID); err != nil {
				return err
			}
		} else {
			seen := make(map[int32]bool, len(in.Indexes))
			rctx := rowCtx(ctx)
			for n, i := range in.Indexes {
				if err := canceled(ctx, n); err != nil {
					return err
				}
				if seen[i] {
					continue
				}
				seen[i] = true
				state, err := taskState(rctx, tx, set, i)
				if err != nil {
					return err
				}
				var (
					exit     int32
					timedOut int
				)
				if err := tx.QueryRowContext(rctx, `SELECT exit_code, timed_out FROM tasks WHERE set_id = ? AND idx = ?`, in.SetID, i).
					Scan(&exit, &timedOut); err != nil {
					return fmt.Errorf("read task: %w", err)
				}
				if !sched.Retryable(state, exit, timedOut != 0) {
					if len(in.Indexes) == 1 {
						return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d of set %d is %s%s: only failed, timed-out or canceled tasks are retried",
							i, in.SetID, state, exitNote(state, exit))
					}
					res.Unchanged++
					continue
				}
				todo = append(todo, i)
			}
		}
		for n, i := range todo {
			if err := canceled(ctx, n); err != nil {
				return err
			}
			info, err := retryTask(rowCtx(ctx), tx, sched.TaskRef{Set: in.SetID, Index: i}, sched.RetriedByUser)
			if err != nil {
				return err
			}
			res.Retried = append(res.Retried, info)
		}
		if !in.All {
			if res.Tasks, err = getTasks(ctx, tx, in.SetID, in.Indexes); err != nil {
				return err
			}
		}
		res.Set, err = getSet(ctx, tx, in.Owner, in.SetID)
		return err
	})
	return res, err
}

func exitNote(st sched.TaskState, exit int32) string {
	if st == sched.TaskFinished || st == sched.TaskExecuted {
		return fmt.Sprintf(" with exit %d", exit)
	}
	return ""
}

// retryableIn lists the tasks of a set that failed, timed out or were
// canceled, by index.
func retryableIn(ctx context.Context, tx *Tx, set sched.SetID) ([]int32, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx FROM tasks WHERE set_id = ? AND (state = 'canceled'
		OR (state IN ('finished', 'executed') AND (exit_code != 0 OR timed_out != 0))) ORDER BY idx`, set)
	if err != nil {
		return nil, fmt.Errorf("list failed tasks: %w", err)
	}
	defer rows.Close()
	var out []int32
	for rows.Next() {
		var i int32
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

// GetTask returns one task of the owner's set in detail: its current
// attempt with the copies of every attempt, and its earlier attempts.
// Errors: ENOTFOUND.
func (db *DB) GetTask(ctx context.Context, owner string, ref sched.TaskRef) (sched.TaskSet, sched.Task, error) {
	var (
		set sched.TaskSet
		t   sched.Task
	)
	err := db.read(ctx, func(tx *Tx) error {
		var err error
		set, t, err = getTask(ctx, tx, owner, ref)
		return err
	})
	return set, t, err
}

// getTask is GetTask inside a read transaction.
func getTask(ctx context.Context, tx *Tx, owner string, ref sched.TaskRef) (set sched.TaskSet, t sched.Task, err error) {
	if set, err = getSet(ctx, tx, owner, ref.Set); err != nil {
		return set, t, err
	}
	if _, err := taskState(ctx, tx, set, ref.Index); err != nil {
		return set, t, err
	}
	ts, err := getTasks(ctx, tx, ref.Set, []int32{ref.Index})
	if err != nil {
		return set, t, err
	}
	if len(ts) != 1 {
		return set, t, sched.Errorf(sched.ENOTFOUND, "task %d of set %d not found", ref.Index, ref.Set)
	}
	t = ts[0]
	t.Attempts, err = getAttempts(ctx, tx, ref)
	return set, t, err
}

// getAttempts reads every attempt of a task, oldest first.
func getAttempts(ctx context.Context, tx *Tx, ref sched.TaskRef) ([]sched.Attempt, error) {
	var out []sched.Attempt
	// +?: see "No joins per task" in store.go.
	rows, err := tx.QueryContext(ctx, `SELECT a.attempt, a.state, a.requested_at, a.executed_at, a.finished_at, a.canceled_at, a.exit_code,
		a.timed_out, a.service_seconds, a.win_copy, a.retried_at, a.retried_by,
		EXISTS (SELECT 1 FROM attempt_outputs o WHERE o.set_id = a.set_id AND o.idx = a.idx AND o.attempt = a.attempt)
		FROM task_attempts a WHERE a.set_id = +? AND a.idx = +? ORDER BY a.attempt`, ref.Set, ref.Index)
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a                            sched.Attempt
			state                        string
			req, exe, fin, canc, retried int64
			timedOut, hasOut             int
		)
		if err := rows.Scan(&a.Attempt, &state, &req, &exe, &fin, &canc, &a.ExitCode, &timedOut, &a.ServiceSeconds, &a.WinCopy,
			&retried, &a.RetriedBy, &hasOut); err != nil {
			return nil, err
		}
		a.State, a.TimedOut, a.HasOutput = sched.TaskState(state), timedOut != 0, hasOut != 0
		a.RequestedAt, a.ExecutedAt, a.FinishedAt, a.CanceledAt, a.RetriedAt = fromNanos(req), fromNanos(exe), fromNanos(fin), fromNanos(canc), fromNanos(retried)
		out = append(out, a)
	}
	return out, rows.Err()
}

// GetAttemptOutput is GetOutput for attempt number attempt of the task (0:
// the current one). An earlier attempt's output is readable when that
// attempt was requested and finished (it was billed); an attempt that
// executed while disclosed and was retried before its request stays
// unreadable, as its run was free. Errors: as GetOutput; ENOTFOUND (no
// such attempt).
func (db *DB) GetAttemptOutput(ctx context.Context, owner string, ref sched.TaskRef, attempt int32, offset, limit int64) (sched.Output, error) {
	var (
		out     sched.Output
		current int32
	)
	if attempt < 0 {
		return out, sched.Errorf(sched.EINVALID, "attempt %d: attempts are numbered from 1", attempt)
	}
	if attempt == 0 {
		return db.GetOutput(ctx, owner, ref, offset, limit) // one read, labelled with its attempt
	}
	err := db.read(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, owner, ref.Set)
		if err != nil {
			return err
		}
		if _, err := taskState(ctx, tx, set, ref.Index); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT attempt FROM tasks WHERE set_id = ? AND idx = ?`, ref.Set, ref.Index).Scan(&current)
	})
	if err != nil {
		return out, err
	}
	if attempt == current {
		out, err = db.GetOutput(ctx, owner, ref, offset, limit)
		if err != nil || out.Attempt == attempt {
			return out, err
		}
		// Retried since the read above: the attempt asked for is kept
		// with the earlier ones now.
		out = sched.Output{}
	}
	if attempt > current {
		return out, sched.Errorf(sched.ENOTFOUND, "task %d of set %d has no attempt %d: its attempts are 1 to %d", ref.Index, ref.Set, attempt, current)
	}
	if offset < 0 || limit < 0 || offset > MaxOutputOffset || limit > MaxOutputOffset {
		return out, sched.Errorf(sched.EINVALID, "offset %d and limit %d must be between 0 and %d bytes", offset, limit, int64(MaxOutputOffset))
	}
	if limit == 0 {
		limit = DefaultOutputRead
	}
	out.Attempt = attempt
	err = db.read(ctx, func(tx *Tx) error {
		var state string
		if err := tx.QueryRowContext(ctx, `SELECT state FROM task_attempts WHERE set_id = ? AND idx = ? AND attempt = ?`, ref.Set, ref.Index, attempt).
			Scan(&state); err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "attempt %d of task %d of set %d not found", attempt, ref.Index, ref.Set)
		} else if err != nil {
			return fmt.Errorf("read attempt: %w", err)
		}
		out.State = sched.TaskState(state)
		switch out.State {
		case sched.TaskExecuted:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "attempt %d of task %d executed while disclosed and was retried before its request: its output is not readable (it was not billed)", attempt, ref.Index)
		case sched.AttemptLost:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "attempt %d of task %d was lost with its worker: there is no output", attempt, ref.Index)
		}
		var tOut, tErr, timedOut int
		err := tx.QueryRowContext(ctx, `SELECT copy_id, worker, substr(stdout, ?, ?), substr(stderr, ?, ?), length(stdout), length(stderr),
			stdout_truncated, stderr_truncated, exit_code, timed_out, cpu_seconds, slot_seconds FROM attempt_outputs WHERE set_id = ? AND idx = ? AND attempt = ?`,
			offset+1, limit, offset+1, limit, ref.Set, ref.Index, attempt).
			Scan(&out.Copy, &out.Worker, &out.Stdout, &out.Stderr, &out.StdoutSize, &out.StderrSize, &tOut, &tErr,
				&out.ExitCode, &timedOut, &out.CPUSeconds, &out.SlotSeconds)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.EFAILEDPRECONDITION, "attempt %d of task %d was canceled before it produced a result: there is no output", attempt, ref.Index)
		} else if err != nil {
			return fmt.Errorf("read output: %w", err)
		}
		out.StdoutTruncated, out.StderrTruncated, out.TimedOut = tOut != 0, tErr != 0, timedOut != 0
		out.Files, err = keptList(ctx, tx, out.Copy)
		return err
	})
	return out, err
}
