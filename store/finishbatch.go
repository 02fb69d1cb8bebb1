// A group commit's common case in a few statements: every report of the
// batch is a live copy's end that wins its requested task, in a set with
// no stop rule in force and no retry wanted, with no kept files and small
// output. Then the copies (each with its output: inlineoutput.go), tasks
// and bill lines are written one statement each for the whole batch (a
// few past 256 reports: see valuesrows.go), their values bound in a
// VALUES list, instead of about eight statements per report. Anything else goes the per-report way
// (finishCopy), which stays the reference: TestFinishBatchSameAsOneByOne
// checks that both write the same rows and answer the same.

package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"

	"batchd/sched"
)

// batchOutputMax is the most output bytes (stdout and stderr together) a
// report of a batched finish carries: a statement's bound values stay
// small, and a large output goes the per-report way.
const batchOutputMax = 4 << 10

// batchable says whether an end is of the kind finishWinners records
// (what the copy's row and the task's need, no more): not killed (nor
// ordered killed, as the server remembers), no start error, no kept
// files, output small enough for the copy's row.
func batchable(in FinishInput) bool {
	return !in.Killed && (in.Known == nil || !in.Known.Killed) && len(in.Kept) == 0 && in.StartError == "" &&
		len(in.Stdout)+len(in.Stderr) <= batchOutputMax
}

// finishWinners records ins the batched way when every report is of the
// common case (see above) and reports whether it did; when it did not, it
// wrote nothing.
//
// When the server's memory of every copy is given (FinishInput.Known), it
// writes from that memory, guarded, without the read (finishknown.go), a
// single report too; when memory is stale, it reads as below.
func finishWinners(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) (bool, error) {
	if len(ins) == 0 {
		return false, nil
	}
	seen := make(map[sched.CopyID]bool, len(ins))
	known := true
	for _, in := range ins {
		if !batchable(in) || seen[in.Copy] {
			return false, nil
		}
		seen[in.Copy] = true
		known = known && in.Known != nil
	}
	if known {
		if done, err := finishKnown(ctx, tx, ins, out); done || err != nil {
			return done, err
		}
	}
	if len(ins) < 2 {
		return false, nil
	}
	ids := make([]byte, 0, 12*len(ins))
	ids = append(ids, '[')
	for i, in := range ins {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, int64(in.Copy), 10)
	}
	ids = append(ids, ']')
	// endCols' columns, the task's and set's by a join: run once per group
	// commit, not once per task (see "No joins per task" in store.go), and
	// two look-ups a row instead of ten scalar subqueries.
	ends := make([]endRow, len(ins))
	found, ruled := 0, false
	if err := tx.rawRowsArgs(ctx, `SELECT j.key, s.stopped_idx < 0 AND (s.stop_on_success != 0 OR s.stop_on_exit != '' OR s.stop_on_output != '' OR s.stop_after != 0),
		c.id, c.set_id, c.idx, c.worker, c.slot, c.speculative, c.state, c.started_at, c.ended_at,
		c.progress, c.cpu_seconds, c.run_seconds, c.outcome, c.suspended_seconds, c.suspended_at, s.owner, s.name, t.state, t.requested_at,
		c.attempt, t.attempt, t.auto_retries, s.retries, s.retry_on
		FROM json_each(?) j CROSS JOIN copies c ON c.id = j.value CROSS JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx
		CROSS JOIN task_sets s ON s.id = c.set_id`, []any{string(ids)}, func(v []driver.Value) error {
		if asInt(v[1]) != 0 {
			ruled = true
			return nil
		}
		ends[asInt(v[0])] = endFromValues(v[2:])
		found++
		return nil
	}); err != nil {
		return false, fmt.Errorf("read %d copies: %w", len(ins), err)
	}
	if ruled {
		return false, nil
	}
	if found != len(ins) {
		return false, nil
	}
	tasks := make(map[sched.TaskRef]bool, len(ins))
	for i, r := range ends {
		in := ins[i]
		if r.copy.Slot.Worker != in.Worker || classifyEnd(r, in) != endWon || r.taskState != sched.TaskRequested ||
			r.pol.wants(in.ExitCode, in.TimedOut) || tasks[r.copy.Task] {
			return false, nil
		}
		tasks[r.copy.Task] = true
	}
	return true, writeWinners(ctx, tx, ins, ends, out, false)
}

// writeWinners writes the ends ins of the copies ends holds, all winners
// of requested tasks (finishWinners), and their outcomes into out, as
// finishCopy would one by one. guarded: ends are the server's memory, not
// read (finishknown.go), and the copies' and tasks' writes return
// errStaleKnown unless each row still is as memory says.
func writeWinners(ctx context.Context, tx *Tx, ins []FinishInput, ends []endRow, out []FinishOutcome, guarded bool) error {
	now := nanos(tx.now)
	n := len(ins)
	ccols, tcols := 10, 6
	if guarded {
		ccols, tcols = 15, 8
	}
	cs := make([]any, 0, ccols*n)
	ts := make([]any, 0, tcols*n)
	bs := make([]any, 0, 13*n)
	// The sets' counts and sums, in the order the sets first appear.
	type setSum struct {
		id              sched.SetID
		k, f            int64
		visible, billed float64
	}
	var sets []setSum
	var days billDays
	for i, in := range ins {
		r, c := ends[i], ends[i].copy
		res := FinishResult{Won: true, WasLive: true, Prior: c.State, Owner: r.owner, ReportedRunSeconds: in.RunSeconds,
			Task: sched.Task{Set: c.Task.Set, Index: c.Task.Index, State: sched.TaskFinished, RequestedAt: fromNanos(r.requestedAt), Progress: -1}}
		res.RunSeconds, res.Clamped = clampRun(in.RunSeconds, observedRun(now, r.started, r.suspended, r.suspendedAt))
		t := &res.Task
		t.ExecutedAt, t.FinishedAt, t.ServiceSeconds, t.ExitCode, t.TimedOut, t.Attempt = tx.now, tx.now, res.RunSeconds, in.ExitCode, in.TimedOut, r.taskAttempt
		t.VisibleResponseSeconds = max(0, tx.now.Sub(t.RequestedAt).Seconds())
		stdout, oCut := capBytes(in.Stdout, in.StdoutTruncated, tx.cap)
		stderr, eCut := capBytes(in.Stderr, in.StderrTruncated, tx.cap)
		b := sched.BillLine{Kind: sched.BillKindCharge, Owner: r.owner, Task: c.Task, SetName: r.setName, Copy: c.ID, Attempt: c.Attempt,
			SlotSeconds: res.RunSeconds, CPUSeconds: in.CPUSeconds, BilledAt: tx.now, Reason: sched.BillFinished,
			ReportedSlotSeconds: res.ReportedRunSeconds, ReportedCPUSeconds: in.CPUSeconds, Clamped: res.Clamped,
			PriceSlotSecond: tx.prices.SlotSecond, PriceCPUSecond: tx.prices.CPUSecond}
		if !b.Clamped {
			b.ReportedSlotSeconds, b.ReportedCPUSeconds = b.SlotSeconds, b.CPUSeconds
		}
		b.Amount = tx.prices.Amount(b.SlotSeconds, b.CPUSeconds)
		res.Bill = &b
		days.add(b)
		out[i] = FinishOutcome{Result: res}
		id, set, idx, exit, timedOut := int64(c.ID), int64(c.Task.Set), int64(c.Task.Index), int64(in.ExitCode), int64(boolInt(in.TimedOut))
		// The output in the copy's row (inlineoutput.go): a batch's is
		// small.
		cs = append(cs, id, in.CPUSeconds, res.RunSeconds, exit, int64(in.Signal), timedOut, stdout, stderr, outFlags(oCut, eCut), res.ReportedRunSeconds)
		ts = append(ts, set, idx, id, exit, timedOut, res.RunSeconds)
		if guarded {
			cs = append(cs, string(in.Worker), set, idx, int64(c.Attempt), r.started)
			ts = append(ts, int64(r.taskAttempt), r.requestedAt)
		}
		bs = append(bs, nil, b.Owner, set, idx, b.SetName, id, b.SlotSeconds, b.CPUSeconds, b.Amount, b.ReportedSlotSeconds, b.ReportedCPUSeconds,
			int64(boolInt(b.Clamped)), int64(b.Attempt))
		// The visible response as the tasks' UPDATE computes it, in SQL's
		// own arithmetic: (now - requested_at) / 1e9.
		visible := max(0, float64(now-r.requestedAt)/1e9)
		k := len(sets) - 1
		for k >= 0 && sets[k].id != c.Task.Set {
			k--
		}
		if k < 0 {
			sets = append(sets, setSum{id: c.Task.Set})
			k = len(sets) - 1
		}
		s := &sets[k]
		s.k++
		if in.ExitCode != 0 || in.TimedOut {
			s.f++
		}
		s.visible += visible
		s.billed += res.RunSeconds
	}
	// The sets' counts and billed sums once per set below, not once per
	// row by the triggers (count_pause, migrations 0021 and 0024).
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 1`); err != nil {
		return fmt.Errorf("pause counts: %w", err)
	}
	tasksChanged := false // the guarded tasks' UPDATE left its count to be read
	if guarded {
		if err := execGuarded(ctx, tx, knownCopiesSQL, []any{now}, ccols, cs); err != nil {
			return fmt.Errorf("end %d copies: %w", n, err)
		}
		// The tasks' rows changed are counted by the read of the last
		// bill line below, the next statement (one statement fewer), when
		// their UPDATE is one statement.
		if n <= valuesMaxRows {
			tasksChanged = true
			if err := execValues(ctx, tx, knownTasksSQL, []any{now}, tcols, ts); err != nil {
				return fmt.Errorf("finish %d tasks: %w", n, err)
			}
		} else if err := execGuarded(ctx, tx, knownTasksSQL, []any{now}, tcols, ts); err != nil {
			return fmt.Errorf("finish %d tasks: %w", n, err)
		}
	} else {
		if err := execValues(ctx, tx, `UPDATE copies SET state = 'won', ended_at = ?1, cpu_seconds = v.column2, run_seconds = v.column3,
			outcome = 'won', exit_code = v.column4, signal = v.column5, timed_out = v.column6,
			out_stdout = v.column7, out_stderr = v.column8, out_flags = v.column9, out_reported = v.column10
			FROM (`+valuesMark+`) AS v WHERE copies.id = v.column1`, []any{now}, ccols, cs); err != nil {
			return fmt.Errorf("end %d copies: %w", n, err)
		}
		if err := execValues(ctx, tx, `UPDATE tasks SET state = 'finished', executed_at = ?1, finished_at = ?1, win_copy = v.column3,
			exit_code = v.column4, timed_out = v.column5, service_seconds = v.column6, visible_response = MAX(0, (?1 - requested_at) / 1e9)
			FROM (`+valuesMark+`) AS v WHERE tasks.set_id = v.column1 AND tasks.idx = v.column2`, []any{now}, tcols, ts); err != nil {
			return fmt.Errorf("finish %d tasks: %w", n, err)
		}
	}
	// The lines' ids given here, as SQLite would give them (the largest
	// plus one, in order: bill_lines has no AUTOINCREMENT), so that the
	// insert returns nothing: a RETURNING clause cost about 3 µs a line.
	// changes(): the rows the statement before it, the tasks' UPDATE,
	// changed (a SELECT leaves it as it was).
	var last, changed int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0), changes() FROM bill_lines`).Scan(&last, &changed); err != nil {
		return fmt.Errorf("bill %d tasks: read the last line: %w", n, err)
	}
	if tasksChanged && changed != int64(n) {
		return fmt.Errorf("finish %d tasks: %d rows changed: %w", n, changed, errStaleKnown)
	}
	for i := range out {
		out[i].Result.Bill.ID = last + 1 + int64(i)
		bs[13*i] = out[i].Result.Bill.ID
	}
	if err := execValues(ctx, tx, `INSERT INTO bill_lines (id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, amount,
		reported_slot_seconds, reported_cpu_seconds, clamped, attempt, billed_at, reason, kind, price_slot_second, price_cpu_second)
		SELECT v.*, ?1, ?2, ?3, ?4, ?5 FROM (`+valuesMark+`) AS v WHERE v.column1 IS NOT NULL`,
		[]any{now, string(sched.BillFinished), string(sched.BillKindCharge), tx.prices.SlotSecond, tx.prices.CPUSecond}, 13, bs); err != nil {
		return fmt.Errorf("bill %d tasks: %w", n, translate(err))
	}
	// The bill's totals: one UPSERT per owner, set and day, not per line.
	if err := days.write(ctx, tx); err != nil {
		return err
	}
	// What the triggers would have added row by row: each task went from
	// requested to finished, failed when its exit code or time-out says so.
	ss := make([]any, 0, 5*len(sets))
	for _, s := range sets {
		ss = append(ss, int64(s.id), s.k, s.f, s.visible, s.billed)
	}
	if err := execValues(ctx, tx, `UPDATE task_sets SET n_requested = n_requested - v.column2, n_finished = n_finished + v.column2,
		n_failed = n_failed + v.column3, sum_visible_response = sum_visible_response + v.column4, billed_slot_seconds = billed_slot_seconds + v.column5
		FROM (`+valuesMark+`) AS v WHERE task_sets.id = v.column1`, nil, 5, ss); err != nil {
		return fmt.Errorf("count %d finished tasks: %w", n, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 0`); err != nil {
		return fmt.Errorf("resume counts: %w", err)
	}
	return nil
}
