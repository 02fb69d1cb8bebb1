// Request and Cancel: a set's tasks asked for (billed once they finish) or
// given up (free unless they were requested).

package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"batchd/sched"
)

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
// changes nothing. Errors: EINVALID (nothing named, or tasks named and
// All), ENOTFOUND (no such set or task), EFAILEDPRECONDITION (a named task
// is canceled).
func (db *DB) Request(ctx context.Context, in RequestInput) (RequestResult, error) {
	var res RequestResult
	if err := sched.CheckNamedOrAll(len(in.Indexes), in.All); err != nil {
		return res, err
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
	if b.Kind == sched.BillKindCharge || b.Kind == "" {
		tx.markFreeTask(b.Task) // a charge names its copy: freePartSQL
	}
	return b, addBillLine(ctx, tx, b)
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
	if err := sched.CheckNamedOrAll(len(in.Indexes), in.All); err != nil {
		return res, err
	}
	err := db.write(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.SetID)
		if err != nil {
			return err
		}
		now := nanos(tx.now)
		if in.All {
			if err := dropKeptOfOutputs(ctx, tx, `o.set_id = ? AND o.idx IN (SELECT idx FROM tasks WHERE set_id = ? AND state = 'executed')`, in.SetID, in.SetID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM outputs WHERE set_id = ? AND idx IN (SELECT idx FROM tasks WHERE set_id = ? AND state = 'executed')`, in.SetID, in.SetID); err != nil {
				return fmt.Errorf("drop outputs: %w", err)
			}
			r, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND state IN ('disclosed', 'executed')`, now, in.SetID)
			if err != nil {
				return fmt.Errorf("cancel tasks: %w", err)
			}
			tx.markFreeSet(in.SetID)
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
					if err := dropKeptOfOutputs(rctx, tx, `o.set_id = ? AND o.idx = ?`, in.SetID, i); err != nil {
						return err
					}
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
				tx.markFreeTask(sched.TaskRef{Set: in.SetID, Index: i})
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
