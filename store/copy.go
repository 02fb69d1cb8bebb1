package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"time"

	"batchd/sched"
)

// Started is a copy a Start decision created, with what its worker needs.
type Started struct {
	Decision sched.Decision
	Spec     sched.TaskSpec
	Owner    string
	Attempt  int32 // the attempt of the task it runs for
}

// ApplyDecisions records the scheduler's decisions in one transaction
// before the driver carries them out: a Start becomes a running copy row, a
// Kill ends a live copy as killed (its run time so far, by the server's
// clock, until the worker reports its own), a Suspend and a Resume change
// its state (and its suspension clock, which the bill of its run leaves
// out). It returns the started copies with their specs; a copy's
// started_at is the time of the decision that started it.
func (db *DB) ApplyDecisions(ctx context.Context, ds []sched.Decision) ([]Started, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	var started []Started
	err := db.write(ctx, func(tx *Tx) (err error) {
		started, err = applyDecisions(ctx, tx, ds)
		return err
	})
	if err != nil {
		return nil, err
	}
	return started, nil
}

// applyDecisions is ApplyDecisions inside tx.
func applyDecisions(ctx context.Context, tx *Tx, ds []sched.Decision) ([]Started, error) {
	var started []Started
	now := nanos(tx.now)
	err := func() error {
		for _, d := range ds {
			var err error
			switch d.Kind {
			case sched.DecisionStart:
				// The copy runs for its task's current attempt.
				st := Started{Decision: d}
				var spec string
				// A join here would be planned again on every run (see
				// "No joins per task" in store.go); a scalar subquery is not.
				err = tx.QueryRowContext(ctx, `SELECT t.spec, (SELECT owner FROM task_sets WHERE id = t.set_id), t.attempt FROM tasks t WHERE t.set_id = ? AND t.idx = ?`,
					d.Task.Set, d.Task.Index).Scan(&spec, &st.Owner, &st.Attempt)
				if err == nil {
					_, err = tx.ExecContext(ctx, `INSERT INTO copies (id, set_id, idx, worker, slot, speculative, state, started_at, attempt)
					VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)`, d.Copy, d.Task.Set, d.Task.Index, d.Slot.Worker, d.Slot.Slot, boolInt(d.Speculative), now, st.Attempt)
				}
				if err == nil {
					err = taskSpec(ctx, tx, spec, d.Task.Index, &st.Spec)
					started = append(started, st)
				}
			case sched.DecisionKill:
				_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'killed', ended_at = ?, run_seconds = MAX(0, (? - started_at) / 1e9)
					WHERE id = ? AND state IN ('running', 'suspended')`, now, now, d.Copy)
			case sched.DecisionSuspend:
				_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'suspended' WHERE id = ? AND state = 'running'`, d.Copy)
				if err == nil {
					err = markSuspension(ctx, tx, d.Copy, true)
				}
			case sched.DecisionResume:
				_, err = tx.ExecContext(ctx, `UPDATE copies SET state = 'running' WHERE id = ? AND state = 'suspended'`, d.Copy)
				if err == nil {
					err = markSuspension(ctx, tx, d.Copy, false)
				}
			}
			if err != nil {
				return fmt.Errorf("record decision %d on copy %d: %w", d.Kind, d.Copy, translate(err))
			}
		}
		return nil
	}()
	if err != nil {
		return nil, err
	}
	return started, nil
}

// FinishThenDecide records reports' ends and then, in the same
// transaction, the decisions that decide returns. decide runs inside the
// transaction once the ends are written, with their outcomes, so that the
// scheduler can hear of them and decide (the caller's lock keeps the
// scheduler and the store in step). One commit instead of two per batch:
// a slot's way from one copy's end to its next copy's start commits once.
//
// If the decisions cannot be recorded, the ends are committed without them
// and decErr says why (the caller treats the started copies as lost, as
// when ApplyDecisions fails). An error, the transaction's own, means that
// nothing was committed, decisions included, although decide ran.
func (db *DB) FinishThenDecide(ctx context.Context, ins []FinishInput, decide func([]FinishOutcome) []sched.Decision) (outs []FinishOutcome, ds []sched.Decision, started []Started, decErr, err error) {
	outs = make([]FinishOutcome, len(ins))
	err = db.write(ctx, func(tx *Tx) error {
		if err := finishCopiesTx(ctx, tx, ins, outs); err != nil {
			return err
		}
		ds = decide(outs)
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

func getCopy(ctx context.Context, tx *Tx, id sched.CopyID) (sched.Copy, string, error) {
	var outcome string
	row := tx.QueryRowContext(ctx, `SELECT `+copyCols+`, outcome FROM copies WHERE id = ?`, id)
	var c sched.Copy
	var (
		spec           int
		state          string
		started, ended int64
		timedOut       int
	)
	err := row.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &state, &started, &ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &c.Attempt, &c.ExitCode, &c.Signal, &timedOut, &outcome)
	c.Speculative, c.TimedOut = spec != 0, timedOut != 0
	c.State = sched.CopyState(state)
	c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
	return c, outcome, err
}

// HeldCopy is a copy a worker says it still runs when it registers.
type HeldCopy struct {
	Copy       sched.CopyID
	Slot       int32
	Suspended  bool
	Progress   float64
	CPUSeconds float64
}

// RegisterInput is a worker's Register call.
type RegisterInput struct {
	Worker     sched.WorkerID
	Hostname   string
	Slots      int32
	CanSuspend bool
	Version    string
	Running    []HeldCopy
	MemoryMB   int64 // memory offered to tasks, MiB
}

// RegisterResult is what a Register did.
type RegisterResult struct {
	Attached []sched.Copy   // held copies the server still wants
	Lost     []sched.Copy   // live copies of the worker it no longer holds
	Kill     []sched.CopyID // held copies the server does not want
}

// RegisterWorker records a worker as up. Every copy the store holds as live
// on it but not held any more is lost; every held copy whose task still
// wants it is attached again (running or suspended as the worker says);
// the other held copies are to be killed.
func (db *DB) RegisterWorker(ctx context.Context, in RegisterInput) (RegisterResult, error) {
	var res RegisterResult
	if in.Worker == "" {
		return res, sched.Errorf(sched.EINVALID, "worker name is empty")
	}
	if in.Slots < 0 {
		return res, sched.Errorf(sched.EINVALID, "slots must not be negative")
	}
	err := db.write(ctx, func(tx *Tx) error {
		now := nanos(tx.now)
		if _, err := tx.ExecContext(ctx, `INSERT INTO workers (id, hostname, slots, can_suspend, state, last_heartbeat, registered_at, version, memory_mb)
			VALUES (?, ?, ?, ?, 'up', ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, slots = excluded.slots,
			can_suspend = excluded.can_suspend, state = 'up', last_heartbeat = excluded.last_heartbeat, registered_at = excluded.registered_at,
			version = excluded.version, memory_mb = excluded.memory_mb`, in.Worker, in.Hostname, in.Slots, boolInt(in.CanSuspend), now, now, in.Version, in.MemoryMB); err != nil {
			return fmt.Errorf("register worker: %w", err)
		}
		if err := recordWorkerEvent(ctx, tx, in.Worker, true, in.Slots, in.CanSuspend, in.MemoryMB); err != nil {
			return err
		}
		live, err := liveCopies(ctx, tx, in.Worker)
		if err != nil {
			return err
		}
		byID := make(map[sched.CopyID]sched.Copy, len(live))
		for _, c := range live {
			byID[c.ID] = c
		}
		held := make(map[sched.CopyID]bool, len(in.Running))
		for _, h := range in.Running {
			if held[h.Copy] {
				continue
			}
			held[h.Copy] = true
			c, ok := byID[h.Copy]
			if !ok || h.Slot != c.Slot.Slot || h.Slot < 0 || h.Slot >= in.Slots {
				res.Kill = append(res.Kill, h.Copy)
				continue
			}
			var state string
			if err := tx.QueryRowContext(ctx, `SELECT state FROM tasks WHERE set_id = ? AND idx = ?`, c.Task.Set, c.Task.Index).Scan(&state); err != nil {
				return fmt.Errorf("read task of held copy: %w", err)
			}
			if state != string(sched.TaskDisclosed) && state != string(sched.TaskRequested) {
				res.Kill = append(res.Kill, h.Copy)
				held[h.Copy] = false // lost below: the task does not want it
				continue
			}
			c.State = sched.CopyRunning
			if h.Suspended {
				c.State = sched.CopySuspended
			}
			c.Progress, c.CPUSeconds = h.Progress, h.CPUSeconds
			if _, err := tx.ExecContext(ctx, `UPDATE copies SET state = ?, progress = ?, cpu_seconds = ? WHERE id = ?`,
				string(c.State), c.Progress, c.CPUSeconds, c.ID); err != nil {
				return fmt.Errorf("attach copy: %w", err)
			}
			if err := markSuspension(ctx, tx, c.ID, h.Suspended); err != nil {
				return err
			}
			res.Attached = append(res.Attached, c)
		}
		for _, c := range live {
			if held[c.ID] {
				continue
			}
			if err := loseCopy(ctx, tx, c.ID); err != nil {
				return err
			}
			res.Lost = append(res.Lost, c)
		}
		return nil
	})
	return res, err
}

func loseCopy(ctx context.Context, tx *Tx, id sched.CopyID) error {
	now := nanos(tx.now)
	var ref sched.TaskRef
	err := tx.QueryRowContext(ctx, `UPDATE copies SET state = 'lost', ended_at = ?, run_seconds = MAX(0, (? - started_at) / 1e9)
		WHERE id = ? AND state IN ('running', 'suspended') RETURNING set_id, idx`, now, now, id).Scan(&ref.Set, &ref.Index)
	if err == sql.ErrNoRows {
		return nil
	} else if err != nil {
		return fmt.Errorf("lose copy %d: %w", id, err)
	}
	return lostAttempt(ctx, tx, ref)
}

func liveCopies(ctx context.Context, tx *Tx, w sched.WorkerID) ([]sched.Copy, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE worker = ? AND state IN ('running', 'suspended') ORDER BY id`, w)
	if err != nil {
		return nil, fmt.Errorf("read live copies: %w", err)
	}
	defer rows.Close()
	var out []sched.Copy
	for rows.Next() {
		c, err := scanCopy(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// LiveCopy is a live copy with what its worker needs to run it.
type LiveCopy struct {
	Copy  sched.Copy
	Spec  sched.TaskSpec
	Owner string
}

// WorkerCopies returns the live copies of worker w, by id, with their
// specs: what the worker should be running (or holding suspended) now.
func (db *DB) WorkerCopies(ctx context.Context, w sched.WorkerID) ([]LiveCopy, error) {
	var out []LiveCopy
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT c.id, c.set_id, c.idx, c.worker, c.slot, c.speculative, c.state, c.started_at, c.ended_at,
			c.progress, c.cpu_seconds, c.run_seconds, t.spec, s.owner, c.attempt
			FROM copies c JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx JOIN task_sets s ON s.id = c.set_id
			WHERE c.worker = ? AND c.state IN ('running', 'suspended') ORDER BY c.id`, w)
		if err != nil {
			return fmt.Errorf("read live copies: %w", err)
		}
		defer rows.Close()
		var later specLater
		for rows.Next() {
			var (
				lc             LiveCopy
				spec, state    string
				isSpec         int
				started, ended int64
			)
			c := &lc.Copy
			if err := rows.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &isSpec, &state, &started, &ended,
				&c.Progress, &c.CPUSeconds, &c.RunSeconds, &spec, &lc.Owner, &c.Attempt); err != nil {
				return err
			}
			c.Speculative, c.State = isSpec != 0, sched.CopyState(state)
			c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
			if err := later.decode(spec, c.Task.Index, len(out), &lc.Spec); err != nil {
				return fmt.Errorf("decode spec: %w", err)
			}
			out = append(out, lc)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		return later.finish(ctx, tx, func(pos int) *sched.TaskSpec { return &out[pos].Spec })
	})
	return out, err
}

// LoseWorker marks a worker whose lease lapsed (state "lease-lapsed") or
// who left ("gone") and loses its live copies, which it returns.
func (db *DB) LoseWorker(ctx context.Context, w sched.WorkerID, state string) ([]sched.Copy, error) {
	var lost []sched.Copy
	err := db.write(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE workers SET state = ? WHERE id = ?`, state, w); err != nil {
			return fmt.Errorf("mark worker: %w", err)
		}
		if err := recordWorkerEvent(ctx, tx, w, false, 0, false, 0); err != nil {
			return err
		}
		live, err := liveCopies(ctx, tx, w)
		if err != nil {
			return err
		}
		for _, c := range live {
			if err := loseCopy(ctx, tx, c.ID); err != nil {
				return err
			}
		}
		lost = live
		return nil
	})
	return lost, err
}

// CopyProgress is one copy's progress in a heartbeat.
type CopyProgress struct {
	Copy       sched.CopyID
	Progress   float64
	CPUSeconds float64
}

// HeartbeatResult is what a heartbeat found.
type HeartbeatResult struct {
	Kill    []sched.CopyID // reported copies not live on the worker
	Changed []CopyProgress // live copies whose progress changed
	Missing []sched.CopyID // live copies of the worker it did not report
}

// Heartbeat records a worker's heartbeat and its copies' progress.
// Errors: ENOTFOUND (unknown worker).
func (db *DB) Heartbeat(ctx context.Context, w sched.WorkerID, copies []CopyProgress) (HeartbeatResult, error) {
	var res HeartbeatResult
	err := db.write(ctx, func(tx *Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE workers SET last_heartbeat = ? WHERE id = ?`, nanos(tx.now), w)
		if err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return sched.Errorf(sched.ENOTFOUND, "worker %s is not registered: register again", w)
		}
		for _, p := range copies {
			var (
				worker, state string
				progress      float64
			)
			err := tx.QueryRowContext(ctx, `SELECT worker, state, progress FROM copies WHERE id = ?`, p.Copy).Scan(&worker, &state, &progress)
			if err == sql.ErrNoRows || (err == nil && (worker != string(w) || !sched.CopyState(state).Live())) {
				res.Kill = append(res.Kill, p.Copy)
				continue
			} else if err != nil {
				return fmt.Errorf("read copy: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE copies SET progress = ?, cpu_seconds = ? WHERE id = ?`, p.Progress, p.CPUSeconds, p.Copy); err != nil {
				return fmt.Errorf("record progress: %w", err)
			}
			if p.Progress != progress {
				res.Changed = append(res.Changed, p)
			}
		}
		live, err := liveCopies(ctx, tx, w)
		if err != nil {
			return err
		}
		reported := make(map[sched.CopyID]bool, len(copies))
		for _, p := range copies {
			reported[p.Copy] = true
		}
		for _, c := range live {
			if !reported[c.ID] {
				res.Missing = append(res.Missing, c.ID)
			}
		}
		return nil
	})
	return res, err
}

// LoseCopies marks the given live copies of worker w lost (a worker that
// no longer reports them) and returns the ones it changed.
func (db *DB) LoseCopies(ctx context.Context, w sched.WorkerID, ids []sched.CopyID) ([]sched.Copy, error) {
	var lost []sched.Copy
	err := db.write(ctx, func(tx *Tx) error {
		for _, id := range ids {
			c, _, err := getCopy(ctx, tx, id)
			if err == sql.ErrNoRows {
				continue
			} else if err != nil {
				return fmt.Errorf("read copy %d: %w", id, err)
			}
			if c.Slot.Worker != w || !c.State.Live() {
				continue
			}
			if err := loseCopy(ctx, tx, id); err != nil {
				return err
			}
			lost = append(lost, c)
		}
		return nil
	})
	return lost, err
}

// ListWorkers returns every worker the store knows, by id, with its busy
// slots (live copies).
func (db *DB) ListWorkers(ctx context.Context) ([]sched.Worker, error) {
	var out []sched.Worker
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.hostname, w.slots, w.can_suspend, w.state, w.last_heartbeat, w.registered_at,
			(SELECT COUNT(*) FROM copies c WHERE c.worker = w.id AND c.state = 'running'), w.memory_mb FROM workers w ORDER BY w.id`)
		if err != nil {
			return fmt.Errorf("list workers: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				w        sched.Worker
				canSusp  int
				hb, regd int64
			)
			if err := rows.Scan(&w.ID, &w.Hostname, &w.Slots, &canSusp, &w.State, &hb, &regd, &w.BusySlots, &w.MemoryMB); err != nil {
				return err
			}
			w.Name, w.CanSuspend = string(w.ID), canSusp != 0
			w.LastHeartbeat, w.RegisteredAt = fromNanos(hb), fromNanos(regd)
			out = append(out, w)
		}
		return rows.Err()
	})
	return out, err
}

// SetSnapshot is one set's unfinished tasks, to rebuild the scheduler.
type SetSnapshot struct {
	Set         sched.SetID
	Owner       string
	DisclosedAt time.Time
	MaxRunning  int32
	Tasks       []sched.TaskInfo
}

// Duration is the run time of one winning copy, or (Censored) how long a
// copy that lost the race had run when the winner finished, for the
// scheduler's estimators (β, t_new) after a restart.
type Duration struct {
	Set      sched.SetID
	Owner    string
	Seconds  float64
	Censored bool
}

// MaxDurations is how many of the latest durations Load returns.
const MaxDurations = 100_000

// Snapshot is what the scheduler must know again after a restart.
type Snapshot struct {
	Workers   []sched.Worker // workers that were up
	Sets      []SetSnapshot  // sets with unfinished tasks, by id
	Durations []Duration     // the latest MaxDurations durations in the order the scheduler saw them
	Copies    []sched.Copy   // live copies, by id
	MaxCopyID sched.CopyID
}

// loadOpenTasks reads the sets with unfinished tasks and those tasks into
// snap.Sets. A restart with 10⁶ queued tasks spends most of its time here:
// each set's slice is made at its size from the set's counts, and the rows
// are read from the driver directly (database/sql's Scan converted every
// column of every row through reflection).
func loadOpenTasks(ctx context.Context, tx *Tx, snap *Snapshot) error {
	sets, err := tx.QueryContext(ctx, `SELECT id, owner, created_at, max_running, n_disclosed + n_executed + n_requested FROM task_sets
		WHERE n_disclosed + n_executed + n_requested > 0 ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read open sets: %w", err)
	}
	byID := map[sched.SetID]int{}
	for sets.Next() {
		var (
			st      SetSnapshot
			created int64
			open    int
		)
		if err := sets.Scan(&st.Set, &st.Owner, &created, &st.MaxRunning, &open); err != nil {
			sets.Close()
			return err
		}
		st.DisclosedAt, st.Tasks = fromNanos(created), make([]sched.TaskInfo, 0, open)
		byID[st.Set] = len(snap.Sets)
		snap.Sets = append(snap.Sets, st)
	}
	sets.Close()
	if err := sets.Err(); err != nil {
		return err
	}
	cur := -1
	return tx.rawRows(ctx, `SELECT t.set_id, t.idx, t.estimate, t.no_speculation, t.deadline, t.state, t.requested_at, t.cpus, t.memory_mb
		FROM task_sets s CROSS JOIN tasks t ON t.set_id = s.id -- CROSS: the open sets outside, their tasks by primary key inside
		WHERE s.n_disclosed + s.n_executed + s.n_requested > 0 AND t.state IN ('disclosed', 'executed', 'requested')
		ORDER BY s.id, t.idx -- not t.set_id: the order the join gives, with no sort of every row`, func(v []driver.Value) error {
		id := sched.SetID(asInt(v[0]))
		if cur < 0 || snap.Sets[cur].Set != id {
			i, ok := byID[id]
			if !ok {
				return fmt.Errorf("open task of set %d, which has no open tasks by its counts", id)
			}
			cur = i
		}
		st := &snap.Sets[cur]
		st.Tasks = append(st.Tasks, sched.TaskInfo{Index: int32(asInt(v[1])), EstimateSeconds: asFloat(v[2]), NoSpeculation: asInt(v[3]) != 0,
			DeadlineSeconds: asFloat(v[4]), State: openState(v[5]), RequestedAt: seconds(fromNanos(asInt(v[6]))),
			Cpus: int32(asInt(v[7])), MemoryMB: int64(asInt(v[8]))})
		return nil
	})
}

// openState is the state of an open task, without a string per row.
func openState(v driver.Value) sched.TaskState {
	switch st := sched.TaskState(asString(v)); st {
	case sched.TaskDisclosed:
		return sched.TaskDisclosed
	case sched.TaskExecuted:
		return sched.TaskExecuted
	case sched.TaskRequested:
		return sched.TaskRequested
	default:
		return st
	}
}

// Load reads the snapshot the server rebuilds its scheduler from.
func (db *DB) Load(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	err := db.read(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM copies`).Scan(&snap.MaxCopyID); err != nil {
			return fmt.Errorf("max copy id: %w", err)
		}
		ws, err := tx.QueryContext(ctx, `SELECT id, hostname, slots, can_suspend, last_heartbeat, memory_mb FROM workers WHERE state = 'up' ORDER BY id`)
		if err != nil {
			return fmt.Errorf("read workers: %w", err)
		}
		for ws.Next() {
			var (
				w  sched.Worker
				cs int
				hb int64
			)
			if err := ws.Scan(&w.ID, &w.Hostname, &w.Slots, &cs, &hb, &w.MemoryMB); err != nil {
				ws.Close()
				return err
			}
			w.Name, w.CanSuspend, w.State, w.LastHeartbeat = string(w.ID), cs != 0, "up", fromNanos(hb)
			snap.Workers = append(snap.Workers, w)
		}
		ws.Close()
		if err := loadOpenTasks(ctx, tx, &snap); err != nil {
			return err
		}
		// The winners, and after each winner the copies of its task that
		// lost the race (live when it finished, killed then or at the next
		// decision), as censored samples: that is the order in which the
		// scheduler learnt them (copy finished, then its rivals' run times).
		ds, err := tx.QueryContext(ctx, `SELECT set_id, owner, secs, censored FROM (
				SELECT c.set_id, s.owner, c.run_seconds AS secs, c.ended_at AS at, c.id AS wid, 0 AS censored, c.id AS id
				FROM copies c JOIN task_sets s ON s.id = c.set_id WHERE c.state = 'won'
				UNION ALL
				SELECT l.set_id, s.owner, MAX(0, (w.ended_at - l.started_at) / 1e9), w.ended_at, w.id, 1, l.id
				FROM copies w JOIN copies l ON l.set_id = w.set_id AND l.idx = w.idx AND l.state = 'killed'
					AND l.started_at <= w.ended_at AND l.ended_at >= w.ended_at
				JOIN task_sets s ON s.id = w.set_id WHERE w.state = 'won'
				ORDER BY at DESC, wid DESC, censored DESC, id DESC LIMIT ?)
			ORDER BY at, wid, censored, id`, MaxDurations)
		if err != nil {
			return fmt.Errorf("read durations: %w", err)
		}
		for ds.Next() {
			var (
				d        Duration
				censored int
			)
			if err := ds.Scan(&d.Set, &d.Owner, &d.Seconds, &censored); err != nil {
				ds.Close()
				return err
			}
			d.Censored = censored != 0
			snap.Durations = append(snap.Durations, d)
		}
		ds.Close()
		if err := ds.Err(); err != nil {
			return err
		}
		cs, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE state IN ('running', 'suspended') ORDER BY id`)
		if err != nil {
			return fmt.Errorf("read live copies: %w", err)
		}
		defer cs.Close()
		for cs.Next() {
			c, err := scanCopy(cs)
			if err != nil {
				return err
			}
			snap.Copies = append(snap.Copies, c)
		}
		return cs.Err()
	})
	sort.Slice(snap.Copies, func(i, j int) bool { return snap.Copies[i].ID < snap.Copies[j].ID })
	return snap, err
}
