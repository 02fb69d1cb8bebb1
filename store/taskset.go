package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"batchd/sched"
)

// DiscloseInput is one Disclose call.
type DiscloseInput struct {
	Owner string
	SetID sched.SetID // 0 creates a set
	Name  string
	Tasks []sched.TaskSpec
	// Array is a task array to disclose instead of Tasks (nil: none).
	Array          *TaskArray
	IdempotencyKey string // "" = none
	Request        bool   // request the new tasks at once
	// MaxRunning caps the set's running copies (0: none; on an append,
	// leave the cap as it is).
	MaxRunning int32
	// Retry is the set's retry policy (on an append, Retries 0 leaves the
	// policy as it is).
	Retry sched.RetryPolicy
	// RequestHash is the content hash recorded with IdempotencyKey ("":
	// Hash computes it from the fields above; a streamed disclose passes
	// the hash of the whole stream, see DiscloseHasher).
	RequestHash string
}

// DiscloseResult is what a Disclose did.
type DiscloseResult struct {
	Set         sched.TaskSet
	FirstIndex  int32
	Count       int32
	Replayed    bool // an earlier call with the same key made this answer
	Created     bool // the set is new
	DisclosedAt time.Time
}

// ChangesSet reports whether in, an append to a set, changes its cap or
// its retry policy: then it needs no tasks.
func (in DiscloseInput) ChangesSet() bool {
	return in.SetID != 0 && (in.MaxRunning > 0 || in.Retry.Retries > 0)
}

// Disclose creates a set or appends tasks to one, records the idempotency
// key in the same transaction, and with in.Request requests the new tasks.
// An append of no tasks that sets a cap or a retry policy (ChangesSet)
// changes the set only. A replayed key (same content hash, see
// DiscloseHasher) returns the first call's answer and writes nothing.
// Errors: EINVALID (no tasks), ECONFLICT
// (the key was used with other content), ENOTFOUND (no such set of the owner),
// EFAILEDPRECONDITION (the set was canceled as a whole, or every task of
// it is canceled),
// ERESOURCEEXHAUSTED (the set would exceed MaxTasksPerSet).
func (db *DB) Disclose(ctx context.Context, in DiscloseInput) (DiscloseResult, error) {
	var res DiscloseResult
	if len(in.Tasks) == 0 && in.Array == nil && !in.ChangesSet() {
		return res, sched.Errorf(sched.EINVALID, "no tasks to disclose: give at least one task")
	}
	if len(in.Tasks) > 0 && in.Array != nil {
		return res, sched.Errorf(sched.EINVALID, "give tasks or an array, not both")
	}
	n := len(in.Tasks)
	if in.Array != nil {
		if in.Array.Count <= 0 || in.Array.Step <= 0 {
			return res, sched.Errorf(sched.EINVALID, "array of %d tasks by step %d: want at least one task and a positive step", in.Array.Count, in.Array.Step)
		}
		n = int(in.Array.Count)
	}
	if in.MaxRunning < 0 {
		return res, sched.Errorf(sched.EINVALID, "max running %d is negative (0 means no cap)", in.MaxRunning)
	}
	if err := in.Retry.Validate(); err != nil {
		return res, err
	}
	hash := ""
	if in.IdempotencyKey != "" {
		hash = in.Hash() // outside the write lock: 200,000 specs take a while
	}
	err := db.write(ctx, func(tx *Tx) error {
		if in.IdempotencyKey != "" {
			known, a, err := idempotencyKey(ctx, tx, in.Owner, in.IdempotencyKey, hash)
			if err != nil {
				return err
			}
			if known {
				res.Replayed, res.FirstIndex, res.Count = true, a.first, a.count
				res.Set, err = getSet(ctx, tx, in.Owner, a.set)
				return err
			}
		}
		setID := in.SetID
		var ntasks int64
		if setID == 0 {
			r, err := tx.ExecContext(ctx, `INSERT INTO task_sets (owner, name, created_at, max_running, retries, retry_on) VALUES (?, ?, ?, ?, ?, ?)`,
				in.Owner, in.Name, nanos(tx.now), in.MaxRunning, in.Retry.Retries, in.Retry.RetryOn())
			if err != nil {
				return fmt.Errorf("create set: %w", err)
			}
			id, _ := r.LastInsertId()
			setID = sched.SetID(id)
			res.Created = true
		} else {
			var canceledAt int64
			var canceled int64
			if err := tx.QueryRowContext(ctx, `SELECT ntasks, canceled_at, n_canceled FROM task_sets WHERE id = ? AND owner = ?`, setID, in.Owner).
				Scan(&ntasks, &canceledAt, &canceled); err == sql.ErrNoRows {
				return sched.Errorf(sched.ENOTFOUND, "task set %d not found", setID)
			} else if err != nil {
				return fmt.Errorf("read set: %w", err)
			}
			if canceledAt != 0 {
				return sched.Errorf(sched.EFAILEDPRECONDITION, "task set %d was canceled at %s (its unrequested tasks were dropped): disclose a new set instead",
					setID, fromNanos(canceledAt).Format(time.DateTime+" MST"))
			}
			if ntasks > 0 && canceled == ntasks {
				return sched.Errorf(sched.EFAILEDPRECONDITION, "task set %d is canceled (all its %d tasks are): disclose a new set instead", setID, ntasks)
			}
		}
		if ntasks+int64(n) > MaxTasksPerSet {
			return sched.Errorf(sched.ERESOURCEEXHAUSTED, "task set %d would hold %d tasks; the limit is %d per set", setID, ntasks+int64(n), MaxTasksPerSet)
		}
		state, reqAt := sched.TaskDisclosed, int64(0)
		if in.Request {
			state, reqAt = sched.TaskRequested, nanos(tx.now)
		}
		// A few rows run through the connection's statement cache: an
		// explicit Prepare bypasses it and compiled this insert (its
		// triggers and foreign keys) again at every disclose, about 80 µs,
		// more than the rest of a one-task disclose (BenchmarkDiscloseOne).
		// Many rows run on a statement prepared for them, which costs less
		// per row than the cache's lookup: BenchmarkBigSet's 100,000-task
		// disclose took 0.72 / 0.74 s through the cache, 0.66 / 0.62 s so.
		var stmt rowExecer = cachedStmt{tx: tx, query: insertTaskSQL}
		if n > preparedRows {
			ps, err := tx.PrepareContext(ctx, insertTaskSQL)
			if err != nil {
				return fmt.Errorf("prepare insert: %w", err)
			}
			defer ps.Close()
			stmt = ps
		}
		now := nanos(tx.now)
		rctx := rowCtx(ctx)
		if a := in.Array; a != nil {
			// One row for the array, and per task a row that refers to it.
			ref, err := insertArray(ctx, tx, setID, ntasks, *a)
			if err != nil {
				return err
			}
			spec := a.Spec
			for i := 0; i < n; i++ {
				if err := canceled(ctx, i); err != nil {
					return err
				}
				if _, err := stmt.ExecContext(rctx, setID, ntasks+int64(i), ref, spec.EstimateSeconds,
					boolInt(spec.NoSpeculation), spec.DeadlineSeconds, string(state), now, reqAt, spec.Cpus, spec.MemoryMB); err != nil {
					return fmt.Errorf("insert task: %w", err)
				}
			}
		}
		for i, spec := range in.Tasks {
			if err := canceled(ctx, i); err != nil {
				return err
			}
			buf, err := json.Marshal(spec)
			if err != nil {
				return fmt.Errorf("encode spec: %w", err)
			}
			if _, err := stmt.ExecContext(rctx, setID, ntasks+int64(i), string(buf), spec.EstimateSeconds,
				boolInt(spec.NoSpeculation), spec.DeadlineSeconds, string(state), now, reqAt, spec.Cpus, spec.MemoryMB); err != nil {
				return fmt.Errorf("insert task: %w", err)
			}
		}
		// The set's counts by state take the new tasks here, once (the
		// per-row trigger went in migration 0015).
		nDisc, nReq := n, 0
		if in.Request {
			nDisc, nReq = 0, n
		}
		if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET ntasks = ntasks + ?, n_disclosed = n_disclosed + ?, n_requested = n_requested + ?,
			max_running = IIF(? > 0, ?, max_running), retries = IIF(? > 0, ?, retries), retry_on = IIF(? > 0, ?, retry_on) WHERE id = ?`,
			n, nDisc, nReq, in.MaxRunning, in.MaxRunning, in.Retry.Retries, in.Retry.Retries, in.Retry.Retries, in.Retry.RetryOn(), setID); err != nil {
			return fmt.Errorf("count tasks: %w", err)
		}
		res.FirstIndex, res.Count = int32(ntasks), int32(n)
		if in.IdempotencyKey != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (owner, key, set_id, first_index, count, created_at, request_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				in.Owner, in.IdempotencyKey, setID, res.FirstIndex, res.Count, now, hash); err != nil {
				return fmt.Errorf("record idempotency key: %w", err)
			}
		}
		res.DisclosedAt = tx.now
		var err error
		res.Set, err = getSet(ctx, tx, in.Owner, setID)
		return err
	})
	return res, err
}

// insertTaskSQL inserts one task row (Disclose).
const insertTaskSQL = `INSERT INTO tasks (set_id, idx, spec, estimate, no_speculation, deadline, state, disclosed_at, requested_at, cpus, memory_mb)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// preparedRows is the most task rows a disclose inserts through the
// statement cache; more get a statement of their own.
const preparedRows = 64

// rowExecer runs one statement with its arguments: a *sql.Stmt or a
// cachedStmt.
type rowExecer interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

// cachedStmt runs one statement of a transaction again and again through
// the connection's statement cache (prepared once per connection, not
// once per call as tx.PrepareContext does).
type cachedStmt struct {
	tx    *Tx
	query string
}

func (c cachedStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return c.tx.ExecContext(ctx, c.query, args...)
}

// RequestInput is one Request call: the named tasks, or with All every
// unrequested task of the set.
type RequestInput struct {
	Owner   string
	SetID   sched.SetID
	Indexes []int32
	All     bool
}

// RequestResult is what a Request did.
type RequestResult struct {
	Set            sched.TaskSet
	Requested      []int32 // moved from disclosed to requested (nil with All)
	NumRequested   int32
	FinishedAtOnce []sched.Task // executed tasks that finished at once
	Bills          []sched.BillLine
	Unchanged      int32
	Tasks          []sched.Task // the named tasks after the call
	RequestedAt    time.Time
}

// Request marks tasks requested. An executed task finishes at once with
// visible response time 0 and its bill line (executed-then-requested) is
// written in the same transaction. Requesting a requested or finished task
// changes nothing. Errors: EINVALID (nothing named), ENOTFOUND (no such set
// or task), EFAILEDPRECONDITION (a named task is canceled).
func (db *DB) Request(ctx context.Context, in RequestInput) (RequestResult, error) {
	var res RequestResult
	if len(in.Indexes) == 0 && !in.All {
		return res, sched.Errorf(sched.EINVALID, "name the tasks to request, or request all")
	}
	err := db.write(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.SetID)
		if err != nil {
			return err
		}
		now := nanos(tx.now)
		res.RequestedAt = tx.now
		var executed []int32
		if in.All {
			r, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'requested', requested_at = ? WHERE set_id = ? AND state = 'disclosed'`, now, in.SetID)
			if err != nil {
				return fmt.Errorf("request tasks: %w", err)
			}
			n, _ := r.RowsAffected()
			res.NumRequested = int32(n)
			if executed, err = indexesIn(ctx, tx, in.SetID, "executed"); err != nil {
				return err
			}
			res.Unchanged = int32(set.Counts.Requested + set.Counts.Finished)
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
				switch state {
				case sched.TaskCanceled:
					return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d of set %d is canceled: it cannot be requested; run it again in place with batchctl retry %d/%d", i, in.SetID, in.SetID, i)
				case sched.TaskDisclosed:
					if _, err := tx.ExecContext(rctx, `UPDATE tasks SET state = 'requested', requested_at = ? WHERE set_id = ? AND idx = ?`, now, in.SetID, i); err != nil {
						return fmt.Errorf("request task: %w", err)
					}
					res.Requested = append(res.Requested, i)
				case sched.TaskExecuted:
					executed = append(executed, i)
				default:
					res.Unchanged++
				}
			}
			res.NumRequested = int32(len(res.Requested))
		}
		for _, i := range executed {
			bill, err := finishExecuted(ctx, tx, set, i)
			if err != nil {
				return err
			}
			res.Bills = append(res.Bills, bill)
		}
		if len(executed) > 0 {
			if res.FinishedAtOnce, err = getTasks(ctx, tx, in.SetID, executed); err != nil {
				return err
			}
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

// finishExecuted finishes an executed task on its request and bills its
// winning copy.
func finishExecuted(ctx context.Context, tx *Tx, set sched.TaskSet, i int32) (sched.BillLine, error) {
	now := nanos(tx.now)
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'finished', requested_at = ?, finished_at = ?, visible_response = 0
		WHERE set_id = ? AND idx = ?`, now, now, set.ID, i); err != nil {
		return sched.BillLine{}, fmt.Errorf("finish executed task: %w", err)
	}
	bill := sched.BillLine{Owner: set.Owner, Task: sched.TaskRef{Set: set.ID, Index: i}, SetName: set.Name,
		BilledAt: tx.now, Reason: sched.BillExecutedThenRequest}
	if err := tx.QueryRowContext(ctx, `SELECT copy_id, slot_seconds, cpu_seconds, COALESCE(reported_slot_seconds, slot_seconds)
		FROM outputs WHERE set_id = ? AND idx = ?`, set.ID, i).
		Scan(&bill.Copy, &bill.SlotSeconds, &bill.CPUSeconds, &bill.ReportedSlotSeconds); err != nil && err != sql.ErrNoRows {
		return bill, fmt.Errorf("read output of executed task: %w", err)
	}
	// The run time of the output was clamped when its copy won.
	bill.ReportedCPUSeconds, bill.Clamped = bill.CPUSeconds, bill.ReportedSlotSeconds > bill.SlotSeconds
	return insertBill(ctx, tx, bill)
}

// insertBill appends a charge line to the ledger at the transaction's
// prices, for the task's current attempt unless b.Attempt names one. The
// unique index on (set_id, idx, attempt) of charges makes a second charge
// for one attempt fail, whatever the logic. Unless the line is
// Clamped, what was reported is what is billed.
func insertBill(ctx context.Context, tx *Tx, b sched.BillLine) (sched.BillLine, error) {
	b.Kind = sched.BillKindCharge
	if !b.Clamped {
		b.ReportedSlotSeconds, b.ReportedCPUSeconds = b.SlotSeconds, b.CPUSeconds
	}
	b.PriceSlotSecond, b.PriceCPUSecond = tx.prices.SlotSecond, tx.prices.CPUSecond
	b.Amount = tx.prices.Amount(b.SlotSeconds, b.CPUSeconds)
	if b.Attempt == 0 {
		// The task's current attempt: the one being finished or stopped.
		if err := tx.QueryRowContext(ctx, `SELECT attempt FROM tasks WHERE set_id = ? AND idx = ?`, b.Task.Set, b.Task.Index).Scan(&b.Attempt); err != nil {
			return b, fmt.Errorf("bill task %d/%d: read attempt: %w", b.Task.Set, b.Task.Index, err)
		}
	}
	r, err := tx.ExecContext(ctx, `INSERT INTO bill_lines (owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason,
		kind, price_slot_second, price_cpu_second, amount, reported_slot_seconds, reported_cpu_seconds, clamped, attempt)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, b.Owner, b.Task.Set, b.Task.Index, b.SetName, b.Copy, b.SlotSeconds, b.CPUSeconds, nanos(b.BilledAt), b.Reason,
		b.Kind, b.PriceSlotSecond, b.PriceCPUSecond, b.Amount, b.ReportedSlotSeconds, b.ReportedCPUSeconds, boolInt(b.Clamped), b.Attempt)
	if err != nil {
		return b, fmt.Errorf("bill task %d/%d: %w", b.Task.Set, b.Task.Index, translate(err))
	}
	b.ID, _ = r.LastInsertId()
	return b, nil
}

// CancelInput is one Cancel call: the named tasks, or (All, without
// Indexes) every unfinished task of the set.
type CancelInput struct {
	Owner   string
	SetID   sched.SetID
	Indexes []int32
	All     bool
}

// CancelResult is what a Cancel did.
type CancelResult struct {
	Set             sched.TaskSet
	Canceled        int32   // tasks canceled that no requested copy ran for (never billed)
	Stopped         int32   // requested tasks stopped while a copy ran (billed)
	AlreadyCanceled int32   // tasks that were canceled before
	Unchanged       int32   // finished tasks
	Indexes         []int32 // the tasks this call canceled (nil for the whole set)
	// Requested lists, for the whole set, the requested tasks it canceled
	// (the unrequested ones are all the set's disclosed and executed).
	Requested []int32
	Bills     []sched.BillLine
}

// Cancel cancels every unfinished task of the set (All; the unrequested
// ones in one UPDATE) and closes the set to appends, or cancels the named
// tasks. A requested, unfinished task with a live copy is stopped and
// billed for what it used: the slot-seconds of its longest-running live
// copy so far and that copy's last reported CPU seconds; one with no live
// copy used nothing and is canceled with no ledger line. Executed tasks
// lose their kept output. Canceling twice is counted, not an error.
// Errors: EINVALID (nothing named, or tasks named and All), ENOTFOUND (no
// such set or task).
func (db *DB) Cancel(ctx context.Context, in CancelInput) (CancelResult, error) {
	var res CancelResult
	if len(in.Indexes) == 0 && !in.All {
		return res, sched.Errorf(sched.EINVALID, "name the tasks to cancel, or cancel all")
	}
	if len(in.Indexes) > 0 && in.All {
		return res, sched.Errorf(sched.EINVALID, "name tasks or cancel all, not both")
	}
	err := db.write(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.SetID)
		if err != nil {
			return err
		}
		now := nanos(tx.now)
		if in.All {
			if _, err := tx.ExecContext(ctx, `DELETE FROM outputs WHERE set_id = ? AND idx IN (SELECT idx FROM tasks WHERE set_id = ? AND state = 'executed')`, in.SetID, in.SetID); err != nil {
				return fmt.Errorf("drop outputs: %w", err)
			}
			r, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND state IN ('disclosed', 'executed')`, now, in.SetID)
			if err != nil {
				return fmt.Errorf("cancel tasks: %w", err)
			}
			n, _ := r.RowsAffected()
			res.Canceled = int32(n)
			res.AlreadyCanceled = int32(set.Counts.Canceled)
			if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET canceled_at = ? WHERE id = ? AND canceled_at = 0`, now, in.SetID); err != nil {
				return fmt.Errorf("close set: %w", err)
			}
			requested, err := indexesIn(ctx, tx, in.SetID, sched.TaskRequested)
			if err != nil {
				return err
			}
			rctx := rowCtx(ctx)
			for _, i := range requested {
				if err := stopRequested(rctx, tx, set, i, &res); err != nil {
					return err
				}
				if _, err := tx.ExecContext(rctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND idx = ?`, now, in.SetID, i); err != nil {
					return fmt.Errorf("cancel task: %w", err)
				}
			}
			res.Requested = requested
			res.Unchanged = int32(set.Counts.Finished)
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
				switch state {
				case sched.TaskCanceled:
					res.AlreadyCanceled++
					continue
				case sched.TaskFinished:
					res.Unchanged++
					continue
				case sched.TaskExecuted:
					if _, err := tx.ExecContext(rctx, `DELETE FROM outputs WHERE set_id = ? AND idx = ?`, in.SetID, i); err != nil {
						return fmt.Errorf("drop output: %w", err)
					}
					res.Canceled++
				case sched.TaskDisclosed:
					res.Canceled++
				case sched.TaskRequested:
					if err := stopRequested(rctx, tx, set, i, &res); err != nil {
						return err
					}
				}
				if _, err := tx.ExecContext(rctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND idx = ?`, now, in.SetID, i); err != nil {
					return fmt.Errorf("cancel task: %w", err)
				}
				res.Indexes = append(res.Indexes, i)
			}
		}
		res.Set, err = getSet(ctx, tx, in.Owner, in.SetID)
		return err
	})
	return res, err
}

// stopRequested bills requested task i of set for what it used, counting
// it in res as stopped, when a copy of it runs (or is suspended); one with
// no live copy used nothing: it is counted as canceled, with no line.
func stopRequested(ctx context.Context, tx *Tx, set sched.TaskSet, i int32, res *CancelResult) error {
	bill, ran, err := billStopped(ctx, tx, set, i)
	if err != nil {
		return err
	}
	if !ran {
		res.Canceled++
		return nil
	}
	res.Bills = append(res.Bills, bill)
	res.Stopped++
	return nil
}

// billStopped writes the canceled-after-request line of a requested task
// whose copy runs; ran is false (and nothing is written) when none does.
func billStopped(ctx context.Context, tx *Tx, set sched.TaskSet, i int32) (bill sched.BillLine, ran bool, err error) {
	bill = sched.BillLine{Owner: set.Owner, Task: sched.TaskRef{Set: set.ID, Index: i}, SetName: set.Name,
		BilledAt: tx.now, Reason: sched.BillCanceledAfterRequest}
	var (
		started, suspendedAt int64
		suspended            float64
	)
	err = tx.QueryRowContext(ctx, `SELECT id, cpu_seconds, started_at, suspended_seconds, suspended_at FROM copies
		WHERE set_id = ? AND idx = ? AND state IN ('running', 'suspended') ORDER BY started_at, id LIMIT 1`, set.ID, i).
		Scan(&bill.Copy, &bill.CPUSeconds, &started, &suspended, &suspendedAt)
	if err == sql.ErrNoRows {
		return bill, false, nil
	}
	if err != nil {
		return bill, false, fmt.Errorf("read copies of stopped task: %w", err)
	}
	// What the server saw it run, without the suspensions it ordered.
	bill.SlotSeconds = observedRun(nanos(tx.now), started, suspended, suspendedAt)
	bill, err = insertBill(ctx, tx, bill)
	return bill, true, err
}

// taskState returns the state of task i of set, ENOTFOUND when out of range.
func taskState(ctx context.Context, tx *Tx, set sched.TaskSet, i int32) (sched.TaskState, error) {
	if i < 0 || int64(i) >= set.Counts.Total {
		return "", sched.Errorf(sched.ENOTFOUND, "task %d not found: set %d has tasks 0 to %d", i, set.ID, set.Counts.Total-1)
	}
	var s string
	if err := tx.QueryRowContext(ctx, `SELECT state FROM tasks WHERE set_id = ? AND idx = ?`, set.ID, i).Scan(&s); err == sql.ErrNoRows {
		return "", sched.Errorf(sched.ENOTFOUND, "task %d of set %d not found", i, set.ID)
	} else if err != nil {
		return "", fmt.Errorf("read task state: %w", err)
	}
	return sched.TaskState(s), nil
}

func indexesIn(ctx context.Context, tx *Tx, set sched.SetID, state sched.TaskState) ([]int32, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx FROM tasks WHERE set_id = ? AND state = ? ORDER BY idx`, set, string(state))
	if err != nil {
		return nil, fmt.Errorf("list %s tasks: %w", state, err)
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

// GetTaskSet returns a set of the owner with its counts. Errors: ENOTFOUND.
func (db *DB) GetTaskSet(ctx context.Context, owner string, id sched.SetID) (sched.TaskSet, error) {
	var set sched.TaskSet
	err := db.read(ctx, func(tx *Tx) (err error) {
		set, err = getSet(ctx, tx, owner, id)
		return err
	})
	return set, err
}

// TaskPage selects a page of a set's tasks.
type TaskPage struct {
	PageSize  int32
	PageToken string // index after which the page starts
	States    []sched.TaskState
}

// ListTasks returns a page of a set's tasks, each with its copies, and the
// token of the next page ("" at the end). Errors: ENOTFOUND, EINVALID (bad
// page token).
func (db *DB) ListTasks(ctx context.Context, owner string, id sched.SetID, p TaskPage) (sched.TaskSet, []sched.Task, string, error) {
	var (
		set   sched.TaskSet
		tasks []sched.Task
		next  string
	)
	size := clampPage(p.PageSize, DefaultTaskPage, MaxTaskPage)
	after := int64(-1)
	if p.PageToken != "" {
		n, err := strconv.ParseInt(p.PageToken, 10, 32)
		if err != nil || n < 0 {
			return set, nil, "", sched.Errorf(sched.EINVALID, "bad page token %q", p.PageToken)
		}
		after = n
	}
	err := db.read(ctx, func(tx *Tx) (err error) {
		if set, err = getSet(ctx, tx, owner, id); err != nil {
			return err
		}
		// +?: a parameter the planner cannot look at (see "No joins per
		// task" in store.go).
		q := `SELECT ` + taskCols + ` FROM tasks WHERE set_id = +? AND idx > +?`
		args := []any{id, after}
		if len(p.States) > 0 {
			q += ` AND state IN (` + plusPlaceholders(len(p.States)) + `)`
			for _, s := range p.States {
				args = append(args, string(s))
			}
		}
		q += ` ORDER BY idx LIMIT +?`
		args = append(args, size+1)
		if tasks, err = queryTasks(ctx, tx, q, args...); err != nil {
			return err
		}
		if len(tasks) > size {
			tasks = tasks[:size]
			next = strconv.Itoa(int(tasks[size-1].Index))
		}
		return attachCopies(ctx, tx, id, tasks)
	})
	return set, tasks, next, err
}

// GetTasks returns the named tasks of a set with their copies (indexes out
// of range are skipped). Errors: ENOTFOUND (no such set).
func (db *DB) GetTasks(ctx context.Context, owner string, id sched.SetID, indexes []int32) (sched.TaskSet, []sched.Task, error) {
	var (
		set   sched.TaskSet
		tasks []sched.Task
	)
	err := db.read(ctx, func(tx *Tx) (err error) {
		if set, err = getSet(ctx, tx, owner, id); err != nil {
			return err
		}
		tasks, err = getTasks(ctx, tx, id, indexes)
		return err
	})
	return set, tasks, err
}

func getTasks(ctx context.Context, tx *Tx, id sched.SetID, indexes []int32) ([]sched.Task, error) {
	var tasks []sched.Task
	for start := 0; start < len(indexes); start += 500 {
		chunk := indexes[start:min(len(indexes), start+500)]
		args := []any{id}
		for _, i := range chunk {
			args = append(args, i)
		}
		ts, err := queryTasks(ctx, tx, `SELECT `+taskCols+` FROM tasks WHERE set_id = ? AND idx IN (`+placeholders(len(chunk))+`) ORDER BY idx`, args...)
		if err != nil {
			return nil, err
		}
		if err := attachCopies(ctx, tx, id, ts); err != nil {
			return nil, err
		}
		tasks = append(tasks, ts...)
	}
	return tasks, nil
}

// AllOwners, passed as the owner to ListTaskSets and GetBill, selects every
// owner's sets or lines (for admins).
const AllOwners = "*"

// ListTaskSets returns a page of the owner's sets (every owner's with
// AllOwners), newest first, and the next page's token. Errors: EINVALID
// (bad page token).
func (db *DB) ListTaskSets(ctx context.Context, owner string, pageSize int32, token string) ([]sched.TaskSet, string, error) {
	size := clampPage(pageSize, DefaultSetPage, MaxSetPage)
	before := int64(1<<63 - 1)
	if token != "" {
		n, err := strconv.ParseInt(token, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", sched.Errorf(sched.EINVALID, "bad page token %q", token)
		}
		before = n
	}
	var (
		sets []sched.TaskSet
		next string
	)
	err := db.read(ctx, func(tx *Tx) error {
		// +?: see "No joins per task" in store.go.
		q, args := `SELECT id, owner FROM task_sets WHERE owner = +? AND id < +? ORDER BY id DESC LIMIT +?`, []any{owner, before, size + 1}
		if owner == AllOwners {
			q, args = `SELECT id, owner FROM task_sets WHERE id < +? ORDER BY id DESC LIMIT +?`, []any{before, size + 1}
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("list sets: %w", err)
		}
		var (
			ids    []sched.SetID
			owners []string
		)
		for rows.Next() {
			var (
				id sched.SetID
				o  string
			)
			if err := rows.Scan(&id, &o); err != nil {
				rows.Close()
				return err
			}
			ids, owners = append(ids, id), append(owners, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) > size {
			ids = ids[:size]
			next = strconv.FormatInt(int64(ids[size-1]), 10)
		}
		for i, id := range ids {
			set, err := getSet(ctx, tx, owners[i], id)
			if err != nil {
				return err
			}
			sets = append(sets, set)
		}
		return nil
	})
	return sets, next, err
}

func clampPage(n int32, def, most int) int {
	switch {
	case n <= 0:
		return def
	case int(n) > most:
		return most
	}
	return int(n)
}

// getSet reads a set of the owner with its counts; ENOTFOUND otherwise (a
// set of another owner is not found, so that nobody learns it exists).
func getSet(ctx context.Context, tx *Tx, owner string, id sched.SetID) (sched.TaskSet, error) {
	set := sched.TaskSet{ID: id}
	var (
		created     int64
		sumResponse float64
		retries     int32
		retryOn     string
	)
	// The counts, the billed sum and the response sum are kept on the set's
	// row by triggers (migration 0006): one row read, whatever the set's size.
	err := tx.QueryRowContext(ctx, `SELECT owner, name, created_at, ntasks, n_disclosed, n_executed, n_requested, n_finished, n_canceled,
		billed_slot_seconds, sum_visible_response, max_running, retries, retry_on FROM task_sets WHERE id = ? AND owner = ?`, id, owner).
		Scan(&set.Owner, &set.Name, &created, &set.Counts.Total, &set.Counts.Disclosed, &set.Counts.Executed, &set.Counts.Requested,
			&set.Counts.Finished, &set.Counts.Canceled, &set.BilledSlotSeconds, &sumResponse, &set.MaxRunning, &retries, &retryOn)
	if err == sql.ErrNoRows {
		return set, sched.Errorf(sched.ENOTFOUND, "task set %d not found", id)
	} else if err != nil {
		return set, fmt.Errorf("read set %d: %w", id, err)
	}
	set.CreatedAt = fromNanos(created)
	if set.Retry, err = sched.ParseRetryOn(retryOn); err != nil {
		return set, fmt.Errorf("read set %d: retry policy %q: %w", id, retryOn, err)
	}
	set.Retry.Retries = retries
	// +?: see "No joins per task" in store.go.
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(DISTINCT idx) FROM copies WHERE set_id = +? AND state IN ('running', 'suspended')`, id).
		Scan(&set.Counts.Running); err != nil {
		return set, fmt.Errorf("count running: %w", err)
	}
	if set.Counts.Finished > 0 {
		set.MeanVisibleResponseSeconds = sumResponse / float64(set.Counts.Finished)
	}
	return set, nil
}

const taskCols = `set_id, idx, spec, state, disclosed_at, requested_at, executed_at, finished_at, canceled_at,
	visible_response, service_seconds, exit_code, timed_out, attempt`

func queryTasks(ctx context.Context, tx *Tx, q string, args ...any) ([]sched.Task, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	defer rows.Close()
	var (
		out   []sched.Task
		later specLater
	)
	for rows.Next() {
		var (
			t                                         sched.Task
			spec, state                               string
			disclosed, requested, executed, fin, canc int64
			timedOut                                  int
		)
		if err := rows.Scan(&t.Set, &t.Index, &spec, &state, &disclosed, &requested, &executed, &fin, &canc,
			&t.VisibleResponseSeconds, &t.ServiceSeconds, &t.ExitCode, &timedOut, &t.Attempt); err != nil {
			return nil, err
		}
		if err := later.decode(spec, t.Index, len(out), &t.Spec); err != nil {
			return nil, fmt.Errorf("decode spec of task %d/%d: %w", t.Set, t.Index, err)
		}
		t.State = sched.TaskState(state)
		t.DisclosedAt, t.RequestedAt, t.ExecutedAt = fromNanos(disclosed), fromNanos(requested), fromNanos(executed)
		t.FinishedAt, t.CanceledAt = fromNanos(fin), fromNanos(canc)
		t.TimedOut = timedOut != 0
		t.Progress = -1
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := later.finish(ctx, tx, func(pos int) *sched.TaskSpec { return &out[pos].Spec }); err != nil {
		return nil, err
	}
	return out, nil
}

// attachCopies reads the copies of the given tasks (sorted by index) and
// sets each task's Progress to the largest progress of a live copy.
func attachCopies(ctx context.Context, tx *Tx, id sched.SetID, tasks []sched.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	pos := make(map[int32]int, len(tasks))
	for i, t := range tasks {
		pos[t.Index] = i
	}
	// +?: see "No joins per task" in store.go.
	rows, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE set_id = +? AND idx BETWEEN +? AND +? ORDER BY id`,
		id, tasks[0].Index, tasks[len(tasks)-1].Index)
	if err != nil {
		return fmt.Errorf("read copies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCopy(rows)
		if err != nil {
			return err
		}
		i, ok := pos[c.Task.Index]
		if !ok {
			continue
		}
		t := &tasks[i]
		t.Copies = append(t.Copies, c)
		if c.State.Live() && c.Progress > t.Progress {
			t.Progress = c.Progress
		}
	}
	return rows.Err()
}

const copyCols = `id, set_id, idx, worker, slot, speculative, state, started_at, ended_at, progress, cpu_seconds, run_seconds,
	attempt, exit_code, signal, timed_out`

type scanner interface{ Scan(...any) error }

func scanCopy(r scanner) (sched.Copy, error) {
	var (
		c              sched.Copy
		spec           int
		state          string
		started, ended int64
		timedOut       int
	)
	if err := r.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &state, &started, &ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &c.Attempt, &c.ExitCode, &c.Signal, &timedOut); err != nil {
		return c, err
	}
	c.Speculative, c.TimedOut = spec != 0, timedOut != 0
	c.State = sched.CopyState(state)
	c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
	return c, nil
}

// GetOutput returns the output of a requested task's current attempt
// (Output.Attempt): finished, or canceled after its request with a kept
// result. offset and limit select a byte range
// of each stream (limit 0 = DefaultOutputRead). Errors: EINVALID (offset
// or limit negative or beyond MaxOutputOffset), ENOTFOUND,
// EFAILEDPRECONDITION (the task is not requested or has no result yet).
func (db *DB) GetOutput(ctx context.Context, owner string, ref sched.TaskRef, offset, limit int64) (sched.Output, error) {
	var out sched.Output
	if offset < 0 || limit < 0 || offset > MaxOutputOffset || limit > MaxOutputOffset {
		// Bounded so that offset+1 and offset+limit never overflow in SQL.
		return out, sched.Errorf(sched.EINVALID, "offset %d and limit %d must be between 0 and %d bytes", offset, limit, int64(MaxOutputOffset))
	}
	if limit == 0 {
		limit = DefaultOutputRead
	}
	err := db.read(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, owner, ref.Set)
		if err != nil {
			return err
		}
		state, err := taskState(ctx, tx, set, ref.Index)
		if err != nil {
			return err
		}
		out.State = state
		switch state {
		case sched.TaskDisclosed:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d is disclosed: request it to read its output", ref.Index)
		case sched.TaskExecuted:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d has executed but is not requested: request it to read its output", ref.Index)
		case sched.TaskRequested:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d is requested and has not finished yet: wait for it", ref.Index)
		}
		var tOut, tErr, timedOut int
		// The attempt in the same read: a retry between two reads would
		// label one attempt's output with the next one's number.
		err = tx.QueryRowContext(ctx, `SELECT copy_id, worker, substr(stdout, ?, ?), substr(stderr, ?, ?), length(stdout), length(stderr),
			stdout_truncated, stderr_truncated, exit_code, timed_out, cpu_seconds, slot_seconds,
			(SELECT attempt FROM tasks WHERE set_id = o.set_id AND idx = o.idx) FROM outputs o WHERE set_id = ? AND idx = ?`,
			offset+1, limit, offset+1, limit, ref.Set, ref.Index).
			Scan(&out.Copy, &out.Worker, &out.Stdout, &out.Stderr, &out.StdoutSize, &out.StderrSize, &tOut, &tErr,
				&out.ExitCode, &timedOut, &out.CPUSeconds, &out.SlotSeconds, &out.Attempt)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d was canceled before it produced a result: there is no output", ref.Index)
		} else if err != nil {
			return fmt.Errorf("read output: %w", err)
		}
		out.StdoutTruncated, out.StderrTruncated, out.TimedOut = tOut != 0, tErr != 0, timedOut != 0
		return nil
	})
	return out, err
}
