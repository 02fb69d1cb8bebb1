// A copy's end as its worker reports it: who wins, what is billed, what is free.

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"batchd/sched"
)

// FinishInput is a worker's report of a copy's end.
type FinishInput struct {
	Worker                           sched.WorkerID
	Copy                             sched.CopyID
	ExitCode                         int32
	Killed, TimedOut                 bool
	Stdout, Stderr                   []byte
	StdoutTruncated, StderrTruncated bool
	CPUSeconds, RunSeconds           float64
	StartError                       string
	Signal                           int32 // the signal that ended it, 0 = none
}

// FinishResult is what a copy's end did.
type FinishResult struct {
	Won      bool // the copy's result became the task's
	Replayed bool // the copy had been reported before; same answer
	// WasLive: the copy was live, so the scheduler must hear of its end:
	// as lost when Lost, else as finished.
	WasLive bool
	Lost    bool
	// Late: the copy had been lost (its worker's lease lapsed) but its
	// result came and its task still wanted one: the result is the task's,
	// and the scheduler must hear it (sched.EventLateResult) so that the
	// task's re-runs are killed. The lost copy's run time, counted as free
	// work lost with its worker when it was lost, is now the task's;
	// LostSeconds is that time, as counted then.
	Late        bool
	LostSeconds float64
	// Prior is the copy's state before the report (lost copies were
	// already counted as waste when they were lost).
	Prior sched.CopyState
	Task  sched.Task // the task after the report (without spec and copies)
	Owner string
	Bill  *sched.BillLine // the bill line written, if any
	// RunSeconds is the run time recorded for the copy: a winner's
	// reported time, at most what the server observed (see clampRun);
	// Clamped says it was cut from ReportedRunSeconds.
	RunSeconds, ReportedRunSeconds float64
	Clamped                        bool
	// Free is the part of free work the copy's run time counts in, "" when
	// none (it won a requested task, or was lost before the report and
	// counted then).
	Free sched.FreePart
	// Retried is set when the set's retry policy retried the task in the
	// same transaction (the attempt the copy won failed): the scheduler
	// must hear EventRetried after the copy's finish.
	Retried *sched.TaskInfo
}

// FinishCopy records a copy's end. A live copy that ran to its end wins
// when its task wants a result: a disclosed task becomes executed (output
// kept, not billed), a requested one finished with its bill line in the
// same transaction. A live copy the worker killed on its own is lost (the
// task runs again, nobody pays). A copy already ended (killed on the
// server's order, lost, or lost the race) only has its CPU and run time
// recorded. Replays get the first answer. Errors: EFAILEDPRECONDITION (no
// such copy), EPERMISSION (a copy of another worker).
func (db *DB) FinishCopy(ctx context.Context, in FinishInput) (FinishResult, error) {
	var res FinishResult
	err := db.write(ctx, func(tx *Tx) (err error) {
		res, err = finishCopy(ctx, tx, in)
		return err
	})
	return res, err
}

// FinishOutcome is the result of one report of FinishCopies.
type FinishOutcome struct {
	Result FinishResult
	Err    error // a coded error of this report alone
}

// FinishCopies records many copies' ends in one transaction (group commit),
// each as FinishCopy does. A report refused with a code (no such copy,
// another worker's copy) gets its error in its outcome and writes nothing;
// any other error aborts them all and is returned.
func (db *DB) FinishCopies(ctx context.Context, ins []FinishInput) ([]FinishOutcome, error) {
	out := make([]FinishOutcome, len(ins))
	err := db.write(ctx, func(tx *Tx) error { return finishCopiesTx(ctx, tx, ins, out) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// finishCopiesTx is FinishCopies inside tx, its outcomes in out.
func finishCopiesTx(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) error {
	for i, in := range ins {
		res, err := finishCopy(ctx, tx, in)
		var se *sched.Error
		if err != nil && !errors.As(err, &se) {
			return err
		}
		out[i] = FinishOutcome{Result: res, Err: err}
	}
	return nil
}

// finishCopy is FinishCopy inside tx. Its coded errors are found before it
// writes anything.
func finishCopy(ctx context.Context, tx *Tx, in FinishInput) (FinishResult, error) {
	var res FinishResult
	err := func() error {
		// One read for everything the finish needs: the copy, its run as
		// the server saw it, its task and the task's set; with scalar
		// subqueries rather than joins (see "No joins per task" in store.go).
		var (
			c              sched.Copy
			outcome        string
			spec           int
			cstate         string
			started, ended int64
			suspended      float64
			suspendedAt    int64
			owner, setName string
			state          string
			requestedAt    int64
			attempt        int32
			pol            retryState
		)
		err := tx.QueryRowContext(ctx, `SELECT c.id, c.set_id, c.idx, c.worker, c.slot, c.speculative, c.state, c.started_at, c.ended_at,
			c.progress, c.cpu_seconds, c.run_seconds, c.outcome, c.suspended_seconds, c.suspended_at,
			(SELECT owner FROM task_sets WHERE id = c.set_id), (SELECT name FROM task_sets WHERE id = c.set_id),
			(SELECT state FROM tasks WHERE set_id = c.set_id AND idx = c.idx), (SELECT requested_at FROM tasks WHERE set_id = c.set_id AND idx = c.idx),
			c.attempt, (SELECT attempt FROM tasks WHERE set_id = c.set_id AND idx = c.idx), (SELECT auto_retries FROM tasks WHERE set_id = c.set_id AND idx = c.idx),
			(SELECT retries FROM task_sets WHERE id = c.set_id), (SELECT retry_on FROM task_sets WHERE id = c.set_id)
			FROM copies c WHERE c.id = ?`, in.Copy).
			Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &cstate, &started, &ended,
				&c.Progress, &c.CPUSeconds, &c.RunSeconds, &outcome, &suspended, &suspendedAt, &owner, &setName, &state, &requestedAt,
				&c.Attempt, &attempt, &pol.used, &pol.retries, &pol.retryOn)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.EFAILEDPRECONDITION, "copy %d is not held by worker %s: the server never started it", in.Copy, in.Worker)
		} else if err != nil {
			return fmt.Errorf("read copy %d: %w", in.Copy, err)
		}
		c.Speculative = spec != 0
		c.State = sched.CopyState(cstate)
		c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
		if c.Slot.Worker != in.Worker {
			return sched.Errorf(sched.EPERMISSION, "copy %d belongs to another worker", in.Copy)
		}
		if outcome != "" {
			res.Replayed, res.Won = true, outcome == "won"
			return nil
		}
		res.Owner = owner
		now := nanos(tx.now)
		res.Task = sched.Task{Set: c.Task.Set, Index: c.Task.Index, State: sched.TaskState(state), RequestedAt: fromNanos(requestedAt), Progress: -1}
		res.WasLive, res.Prior = c.State.Live(), c.State
		newCopy := string(c.State)
		// The task wants this copy's result: it still needs a run, and the
		// copy ran for its current attempt (a late result of an attempt
		// retried since is not the new attempt's).
		wants := (state == string(sched.TaskDisclosed) || state == string(sched.TaskRequested)) && c.Attempt == attempt
		switch {
		case c.State == sched.CopyLost && !in.Killed && wants:
			// Lost with its worker's lease, but it ran to its end before
			// its worker stopped it: the first result is kept, and the
			// re-runs are killed (res.Late tells the server to say so).
			newCopy, res.Won, res.Late = string(sched.CopyWon), true, true
		case !c.State.Live():
			// Ended on the server's order or lost before: keep what it used.
		case in.Killed:
			newCopy, res.Lost = string(sched.CopyLost), true
		case c.Attempt != attempt:
			// A live copy of an attempt that ended cannot be (a task is
			// retried only without live copies); its result is not the
			// task's in any case.
			newCopy = string(sched.CopyKilled)
		case wants:
			newCopy, res.Won = string(sched.CopyWon), true
		default:
			newCopy = string(sched.CopyKilled)
		}
		outcomeStr := "discarded"
		res.ReportedRunSeconds = in.RunSeconds
		if res.Won {
			outcomeStr = "won"
			in.RunSeconds, res.Clamped = clampRun(in.RunSeconds, observedRun(now, started, suspended, suspendedAt))
		}
		res.RunSeconds = in.RunSeconds
		endedAt := now
		if !c.State.Live() && !res.Late && !c.EndedAt.IsZero() {
			endedAt = nanos(c.EndedAt)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE copies SET state = ?, ended_at = ?, cpu_seconds = ?, run_seconds = ?, outcome = ?,
			exit_code = ?, signal = ?, timed_out = ? WHERE id = ?`,
			newCopy, endedAt, in.CPUSeconds, in.RunSeconds, outcomeStr, in.ExitCode, in.Signal, boolInt(in.TimedOut), in.Copy); err != nil {
			return fmt.Errorf("end copy %d: %w", in.Copy, err)
		}
		if res.Won {
			if err := win(ctx, tx, c, state, owner, setName, in, &res); err != nil {
				return err
			}
		}
		if res.Lost {
			if err := lostAttempt(ctx, tx, c.Task); err != nil {
				return err
			}
		}
		switch {
		case res.Late && state == string(sched.TaskDisclosed):
			res.Free, res.LostSeconds = sched.FreeExecutedUnrequested, c.RunSeconds
		case res.Late:
			res.LostSeconds = c.RunSeconds // billed now, no longer free
		case c.State == sched.CopyLost:
			// Counted as lost with its worker when it was lost.
		case res.Won && state == string(sched.TaskDisclosed):
			// freePartSQL's first case, without a query: the task is
			// executed now and nobody asked for its result.
			res.Free = sched.FreeExecutedUnrequested
		case res.Won:
			// A requested task's winner is billed, not free.
		case newCopy == string(sched.CopyLost):
			res.Free = sched.FreeLostWithWorker
		default:
			// A killed copy: which part depends on the ledger and the
			// task's winner, so ask the one classifier.
			if res.Free, err = copyFreePart(ctx, tx, in.Copy); err != nil {
				return err
			}
		}
		if res.Won {
			t := &res.Task
			t.ExecutedAt, t.ServiceSeconds, t.ExitCode, t.TimedOut, t.Attempt = tx.now, in.RunSeconds, in.ExitCode, in.TimedOut, attempt
			if t.State == sched.TaskDisclosed {
				t.State = sched.TaskExecuted
			} else {
				t.State, t.FinishedAt = sched.TaskFinished, tx.now
				t.VisibleResponseSeconds = max(0, tx.now.Sub(t.RequestedAt).Seconds())
			}
			// The set's policy retries the failed attempt in the same
			// transaction, after its bill: a crash between the two
			// cannot lose the retry or bill twice.
			if pol.wants(in.ExitCode, in.TimedOut) {
				info, err := retryTask(ctx, tx, c.Task, sched.RetriedByPolicy)
				if err != nil {
					return err
				}
				res.Retried = &info
			}
		}
		return nil
	}()
	return res, err
}

// win makes copy c's result its task's result.
func win(ctx context.Context, tx *Tx, c sched.Copy, state, owner, setName string, in FinishInput, res *FinishResult) error {
	now := nanos(tx.now)
	stdout, stderr := in.Stdout, in.Stderr
	if in.StartError != "" && len(stderr) == 0 {
		stderr = []byte(in.StartError + "\n")
	}
	stdout, tOut := capBytes(stdout, in.StdoutTruncated, tx.cap)
	stderr, tErr := capBytes(stderr, in.StderrTruncated, tx.cap)
	if _, err := tx.ExecContext(ctx, `INSERT INTO outputs (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
		exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Task.Set, c.Task.Index, c.ID, c.Slot.Worker, stdout, stderr, boolInt(tOut), boolInt(tErr),
		in.ExitCode, boolInt(in.TimedOut), in.CPUSeconds, in.RunSeconds, res.ReportedRunSeconds); err != nil {
		return fmt.Errorf("keep output of copy %d: %w", c.ID, translate(err))
	}
	if state == string(sched.TaskDisclosed) {
		_, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'executed', executed_at = ?, win_copy = ?, exit_code = ?, timed_out = ?, service_seconds = ?
			WHERE set_id = ? AND idx = ?`, now, c.ID, in.ExitCode, boolInt(in.TimedOut), in.RunSeconds, c.Task.Set, c.Task.Index)
		if err != nil {
			return fmt.Errorf("execute task: %w", err)
		}
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'finished', executed_at = ?, finished_at = ?, win_copy = ?, exit_code = ?, timed_out = ?,
		service_seconds = ?, visible_response = MAX(0, (? - requested_at) / 1e9) WHERE set_id = ? AND idx = ?`,
		now, now, c.ID, in.ExitCode, boolInt(in.TimedOut), in.RunSeconds, now, c.Task.Set, c.Task.Index); err != nil {
		return fmt.Errorf("finish task: %w", err)
	}
	// A winning copy runs for its task's current attempt (finishCopy checked).
	bill, err := insertBill(ctx, tx, sched.BillLine{Owner: owner, Task: c.Task, SetName: setName, Copy: c.ID, Attempt: c.Attempt,
		SlotSeconds: in.RunSeconds, CPUSeconds: in.CPUSeconds, BilledAt: tx.now, Reason: sched.BillFinished,
		ReportedSlotSeconds: res.ReportedRunSeconds, ReportedCPUSeconds: in.CPUSeconds, Clamped: res.Clamped})
	if err != nil {
		return err
	}
	res.Bill = &bill
	return nil
}

// capBytes cuts b to limit bytes (limit <= 0: no cap) and says whether it
// is truncated.
func capBytes(b []byte, truncated bool, limit int64) ([]byte, bool) {
	if b == nil {
		b = []byte{}
	}
	if limit > 0 && int64(len(b)) > limit {
		return b[:limit], true
	}
	return b, truncated
}
