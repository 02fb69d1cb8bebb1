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
	// Kept are the files the copy left that match its keep patterns,
	// kept with the result if the copy wins.
	Kept []KeptContent
	// Known is the server's memory of the copy since its start
	// (Started.Known), nil when it has none: a group commit then writes
	// without reading the copy first, and its writes refuse a stale
	// memory (finishknown.go). Never a worker's word.
	Known *FinishKnown
}

// FinishResult is what a copy's end did.
type FinishResult struct {
	Won bool // the copy's result became the task's
	// PilotFailed: the copy was lost to a pilot's end, the task's last
	// such loss the server allows: the task is canceled with its reason
	// (pilot.go), and the scheduler must hear it.
	PilotFailed bool
	// PilotStopping: the copy was handed back by a pilot, which takes no
	// copy from now on (pilot.go): the scheduler must hear it
	// (sched.EventWorkerStopping) before it decides.
	PilotStopping bool
	Replayed      bool // the copy had been reported before; same answer
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
	// Stopped is set when the result fired the set's stop rule, which
	// canceled the set's work that still needs a run in the same
	// transaction: the scheduler must hear EventStopped.
	Stopped *StopOutcome
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
	err := db.writeFinish(ctx, ins, func(tx *Tx, ins []FinishInput) error { return finishCopiesTx(ctx, tx, ins, out) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// finishCopiesTx is FinishCopies inside tx, its outcomes in out.
func finishCopiesTx(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) error {
	if done, err := finishWinners(ctx, tx, ins, out); done || err != nil {
		return err
	}
	if done, err := finishSplit(ctx, tx, ins, out); done || err != nil {
		return err
	}
	for i, in := range ins {
		if err := finishOne(ctx, tx, in, &out[i]); err != nil {
			return err
		}
	}
	return nil
}

// finishOne records one end as finishCopy does, its outcome in out; it
// returns only an error that aborts the transaction (a coded error is the
// report's own, in out).
func finishOne(ctx context.Context, tx *Tx, in FinishInput, out *FinishOutcome) error {
	res, err := finishCopy(ctx, tx, in)
	var se *sched.Error
	if err != nil && !errors.As(err, &se) {
		return err
	}
	*out = FinishOutcome{Result: res, Err: err}
	return nil
}

// endRow is what a copy's end needs to know of the copy, its run as the
// server saw it, its task and the task's set, read in one query.
type endRow struct {
	copy           sched.Copy
	outcome        string // an earlier report's outcome ("won", "discarded"), "" when none
	started        int64  // the copy's start, nanoseconds
	suspended      float64
	suspendedAt    int64
	owner, setName string
	taskState      sched.TaskState
	requestedAt    int64
	taskAttempt    int32 // the task's current attempt
	pol            retryState
}

// readEnd reads copy id's endRow. Errors: sql.ErrNoRows (no such copy),
// wrapped.
func readEnd(ctx context.Context, tx *Tx, id sched.CopyID) (endRow, error) {
	// Scalar subqueries rather than joins (see "No joins per task" in
	// store.go).
	r, err := scanEnd(tx.QueryRowContext(ctx, `SELECT `+endCols+` FROM copies c WHERE c.id = ?`, id).Scan)
	if err != nil {
		return r, fmt.Errorf("read copy %d: %w", id, err)
	}
	return r, nil
}

// endCols are the columns of an endRow, of copy c (scanEnd reads them).
const endCols = `c.id, c.set_id, c.idx, c.worker, c.slot, c.speculative, c.state, c.started_at, c.ended_at,
		c.progress, c.cpu_seconds, c.run_seconds, c.outcome, c.suspended_seconds, c.suspended_at,
		(SELECT owner FROM task_sets WHERE id = c.set_id), (SELECT name FROM task_sets WHERE id = c.set_id),
		(SELECT state FROM tasks WHERE set_id = c.set_id AND idx = c.idx), (SELECT requested_at FROM tasks WHERE set_id = c.set_id AND idx = c.idx),
		c.attempt, (SELECT attempt FROM tasks WHERE set_id = c.set_id AND idx = c.idx), (SELECT auto_retries FROM tasks WHERE set_id = c.set_id AND idx = c.idx),
		(SELECT retries FROM task_sets WHERE id = c.set_id), (SELECT retry_on FROM task_sets WHERE id = c.set_id)`

// scanEnd reads endCols through scan, after the extra destinations
// given first.
func scanEnd(scan func(dest ...any) error, extra ...any) (endRow, error) {
	var (
		r             endRow
		spec          int
		cstate, state string
		ended         int64
	)
	c := &r.copy
	dest := append(extra, &c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &cstate, &r.started, &ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &r.outcome, &r.suspended, &r.suspendedAt, &r.owner, &r.setName, &state, &r.requestedAt,
		&c.Attempt, &r.taskAttempt, &r.pol.used, &r.pol.retries, &r.pol.retryOn)
	if err := scan(dest...); err != nil {
		return r, err
	}
	c.Speculative = spec != 0
	c.State, r.taskState = sched.CopyState(cstate), sched.TaskState(state)
	c.StartedAt, c.EndedAt = fromNanos(r.started), fromNanos(ended)
	return r, nil
}

// endOutcome is what a worker's report of a copy's end does to the copy
// and its task, as classifyEnd names it.
type endOutcome string

const (
	// endReplayed: the copy's end was reported before; the report gets
	// the first answer and writes nothing.
	endReplayed endOutcome = "replayed"
	// endWonLate: the copy was lost with its worker's lease but ran to its
	// end, and its task still wants a result: the copy wins, and the
	// task's re-runs are killed.
	endWonLate endOutcome = "won-late"
	// endAlreadyEnded: the copy had ended (killed on the server's order,
	// lost, or lost the race): only what it used is recorded.
	endAlreadyEnded endOutcome = "already-ended"
	// endKilledByWorker: a live copy its worker killed on its own is lost;
	// the task runs again and nobody pays.
	endKilledByWorker endOutcome = "killed-by-worker"
	// endStaleAttempt: a live copy of an attempt that ended (which a retry
	// without live copies rules out): killed, its result not the task's.
	endStaleAttempt endOutcome = "stale-attempt"
	// endWon: a live copy ran to its end and its task wants a result: its
	// result is the task's.
	endWon endOutcome = "won"
	// endUnwanted: a live copy ran to its end but its task has its result
	// or is canceled: killed.
	endUnwanted endOutcome = "unwanted"
)

// classifyEnd names what report in does to the copy r holds. Its cases
// are checked in order; the first that holds is the outcome.
func classifyEnd(r endRow, in FinishInput) endOutcome {
	c := r.copy
	// The task wants this copy's result: it still needs a run, and the
	// copy ran for its current attempt (a late result of an attempt
	// retried since is not the new attempt's).
	wants := (r.taskState == sched.TaskDisclosed || r.taskState == sched.TaskRequested) && c.Attempt == r.taskAttempt
	switch {
	case r.outcome != "":
		return endReplayed
	case c.State == sched.CopyLost && !in.Killed && wants:
		return endWonLate
	case !c.State.Live():
		return endAlreadyEnded
	case in.Killed:
		return endKilledByWorker
	case c.Attempt != r.taskAttempt:
		return endStaleAttempt
	case wants:
		return endWon
	default:
		return endUnwanted
	}
}

// won reports whether the copy's result becomes its task's.
func (o endOutcome) won() bool { return o == endWon || o == endWonLate }

// copyState is the state a copy in state prior ends in.
func (o endOutcome) copyState(prior sched.CopyState) sched.CopyState {
	switch o {
	case endWon, endWonLate:
		return sched.CopyWon
	case endKilledByWorker:
		return sched.CopyLost
	case endStaleAttempt, endUnwanted:
		return sched.CopyKilled
	default:
		return prior
	}
}

// endFree is the part of free work an ended copy's run time counts in, and
// the run time that a late winner takes back from the work lost with its
// worker. ask: only the ledger knows (a killed copy: copyFreePart).
func endFree(o endOutcome, r endRow) (part sched.FreePart, lostSeconds float64, ask bool) {
	disclosed := r.taskState == sched.TaskDisclosed
	switch {
	case o == endWonLate && disclosed:
		return sched.FreeExecutedUnrequested, r.copy.RunSeconds, false
	case o == endWonLate:
		return "", r.copy.RunSeconds, false // billed now, no longer free
	case r.copy.State == sched.CopyLost:
		return "", 0, false // counted as lost with its worker when it was lost
	case o == endWon && disclosed:
		// freePartSQL's first case, without a query: the task is executed
		// now and nobody asked for its result.
		return sched.FreeExecutedUnrequested, 0, false
	case o == endWon:
		return "", 0, false // a requested task's winner is billed, not free
	case o == endKilledByWorker:
		return sched.FreeLostWithWorker, 0, false
	default:
		// A killed copy: which part depends on the ledger and the task's
		// winner, so ask the one classifier.
		return "", 0, true
	}
}

// finishCopy is FinishCopy inside tx. Its coded errors are found before it
// writes anything.
func finishCopy(ctx context.Context, tx *Tx, in FinishInput) (FinishResult, error) {
	r, err := readEnd(ctx, tx, in.Copy)
	if errors.Is(err, sql.ErrNoRows) {
		return FinishResult{}, sched.Errorf(sched.EFAILEDPRECONDITION, "copy %d is not held by worker %s: the server never started it", in.Copy, in.Worker)
	} else if err != nil {
		return FinishResult{}, err
	}
	if r.copy.Slot.Worker != in.Worker {
		return FinishResult{}, sched.Errorf(sched.EPERMISSION, "copy %d belongs to another worker", in.Copy)
	}
	o := classifyEnd(r, in)
	if o == endReplayed {
		return FinishResult{Replayed: true, Won: r.outcome == "won"}, nil
	}
	res := FinishResult{
		Won: o.won(), Late: o == endWonLate, Lost: o == endKilledByWorker,
		WasLive: r.copy.State.Live(), Prior: r.copy.State, Owner: r.owner,
		Task: sched.Task{Set: r.copy.Task.Set, Index: r.copy.Task.Index, State: r.taskState, RequestedAt: fromNanos(r.requestedAt), Progress: -1},
	}
	err = applyEnd(ctx, tx, r, o, in, &res)
	return res, err
}

// applyEnd writes outcome o of report in on the copy r holds, and its
// result, bill, lost attempt or retry, into res.
func applyEnd(ctx context.Context, tx *Tx, r endRow, o endOutcome, in FinishInput, res *FinishResult) error {
	c := r.copy
	now := nanos(tx.now)
	outcome := "discarded"
	res.ReportedRunSeconds = in.RunSeconds
	if res.Won {
		outcome = "won"
		in.RunSeconds, res.Clamped = clampRun(in.RunSeconds, observedRun(now, r.started, r.suspended, r.suspendedAt))
	}
	res.RunSeconds = in.RunSeconds
	endedAt := now
	if o == endAlreadyEnded && !c.EndedAt.IsZero() {
		endedAt = nanos(c.EndedAt)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE copies SET state = ?, ended_at = ?, cpu_seconds = ?, run_seconds = ?, outcome = ?,
		exit_code = ?, signal = ?, timed_out = ? WHERE id = ?`,
		string(o.copyState(c.State)), endedAt, in.CPUSeconds, in.RunSeconds, outcome, in.ExitCode, in.Signal, boolInt(in.TimedOut), in.Copy); err != nil {
		return fmt.Errorf("end copy %d: %w", in.Copy, err)
	}
	tx.markFreeTask(c.Task)
	if res.Won {
		if err := win(ctx, tx, c, string(r.taskState), r.owner, r.setName, in, res); err != nil {
			return err
		}
	}
	if res.Lost {
		failed, err := tx.pilotLost(ctx, in.Worker, c.Task)
		if err != nil {
			return err
		}
		res.PilotFailed = failed
		if res.PilotStopping, err = tx.pilotStopping(ctx, in.Worker); err != nil {
			return err
		}
		if err := lostAttempt(ctx, tx, c.Task); err != nil {
			return err
		}
	}
	var ask bool
	res.Free, res.LostSeconds, ask = endFree(o, r)
	if ask {
		var err error
		if res.Free, err = copyFreePart(ctx, tx, in.Copy); err != nil {
			return err
		}
	}
	if !res.Won {
		return nil
	}
	t := &res.Task
	t.ExecutedAt, t.ServiceSeconds, t.ExitCode, t.TimedOut, t.Attempt = tx.now, in.RunSeconds, in.ExitCode, in.TimedOut, r.taskAttempt
	if t.State == sched.TaskDisclosed {
		t.State = sched.TaskExecuted
	} else {
		t.State, t.FinishedAt = sched.TaskFinished, tx.now
		t.VisibleResponseSeconds = max(0, tx.now.Sub(t.RequestedAt).Seconds())
	}
	// The set's stop rule fires in the same transaction: the result and
	// the cancel of the rest commit together or not at all. A task that
	// fired it is not retried: the set has stopped.
	stop, err := applyStop(ctx, tx, c, r.taskAttempt, in)
	if err != nil {
		return err
	}
	res.Stopped = stop
	// The set's policy retries the failed attempt in the same transaction,
	// after its bill: a crash between the two cannot lose the retry or
	// bill twice.
	if stop == nil && r.pol.wants(in.ExitCode, in.TimedOut) {
		info, err := retryTask(ctx, tx, c.Task, sched.RetriedByPolicy)
		if err != nil {
			return err
		}
		res.Retried = &info
	}
	return nil
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
	if err := keepOutput(ctx, tx, c, in, stdout, stderr, tOut, tErr, res.ReportedRunSeconds); err != nil {
		return err
	}
	if err := keepFiles(ctx, tx, c.ID, owner, in.Kept); err != nil {
		return err
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
