// A group commit's common case in a few statements: every report of the
// batch is a live copy's end that wins its requested task, in a set with
// no stop rule in force and no retry wanted, with no kept files and small
// output. Then the copies, outputs, tasks and bill lines are written one
// statement each for the whole batch, over a JSON array of the rows
// (json_each), instead of about eight statements per report; the
// statements' texts, and their cached plans, do not depend on the batch's
// size. Anything else goes the per-report way (finishCopy), which stays
// the reference: TestFinishBatchSameAsOneByOne checks that both write the
// same rows and answer the same.

package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"batchd/sched"
)

// batchOutputMax is the most output bytes (stdout and stderr together) a
// report of a batched finish carries: its output travels hex-encoded in
// the batch's JSON.
const batchOutputMax = 4 << 10

// finishWinners records ins the batched way when every report is of the
// common case (see above) and reports whether it did; when it did not, it
// wrote nothing.
func finishWinners(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) (bool, error) {
	if len(ins) < 2 {
		return false, nil
	}
	ids := make([]byte, 0, 12*len(ins))
	ids = append(ids, '[')
	seen := make(map[sched.CopyID]bool, len(ins))
	for i, in := range ins {
		if in.Killed || len(in.Kept) > 0 || in.StartError != "" || len(in.Stdout)+len(in.Stderr) > batchOutputMax || seen[in.Copy] {
			return false, nil
		}
		seen[in.Copy] = true
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, int64(in.Copy), 10)
	}
	ids = append(ids, ']')
	rows, err := tx.QueryContext(ctx, `SELECT j.key, (SELECT stopped_idx < 0 AND (stop_on_success != 0 OR stop_on_exit != '' OR stop_on_output != '' OR stop_after != 0)
		FROM task_sets WHERE id = c.set_id), `+endCols+` FROM json_each(?) j CROSS JOIN copies c ON c.id = j.value`, string(ids))
	if err != nil {
		return false, fmt.Errorf("read %d copies: %w", len(ins), err)
	}
	ends := make([]endRow, len(ins))
	found := 0
	for rows.Next() {
		var i, rule int
		r, err := scanEnd(rows.Scan, &i, &rule)
		if err != nil {
			rows.Close()
			return false, fmt.Errorf("read %d copies: %w", len(ins), err)
		}
		if rule != 0 {
			rows.Close()
			return false, nil
		}
		ends[i] = r
		found++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read %d copies: %w", len(ins), err)
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
	return true, writeWinners(ctx, tx, ins, ends, out)
}

// winRow is one winner's row in the batch's JSON.
type winRow struct {
	Copy     sched.CopyID   `json:"c"`
	Set      sched.SetID    `json:"s"`
	Index    int32          `json:"x"`
	Worker   sched.WorkerID `json:"w"`
	Exit     int32          `json:"e"`
	Signal   int32          `json:"g"`
	TimedOut int            `json:"t"`
	CPU      float64        `json:"u"`
	Run      float64        `json:"r"`
	Reported float64        `json:"p"`
	Stdout   string         `json:"o"` // hex
	Stderr   string         `json:"d"` // hex
	OutCut   int            `json:"oc"`
	ErrCut   int            `json:"dc"`
	// The bill line's columns.
	Owner   string  `json:"ow"`
	SetName string  `json:"sn"`
	Attempt int32   `json:"a"`
	RepSlot float64 `json:"rs"`
	RepCPU  float64 `json:"rc"`
	Clamped int     `json:"cl"`
	Amount  float64 `json:"am"`
}

// writeWinners writes the ends ins of the copies ends holds, all winners
// of requested tasks (finishWinners), and their outcomes into out, as
// finishCopy would one by one.
func writeWinners(ctx context.Context, tx *Tx, ins []FinishInput, ends []endRow, out []FinishOutcome) error {
	now := nanos(tx.now)
	ws := make([]winRow, len(ins))
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
		out[i] = FinishOutcome{Result: res}
		ws[i] = winRow{Copy: c.ID, Set: c.Task.Set, Index: c.Task.Index, Worker: c.Slot.Worker, Exit: in.ExitCode, Signal: in.Signal,
			TimedOut: boolInt(in.TimedOut), CPU: in.CPUSeconds, Run: res.RunSeconds, Reported: res.ReportedRunSeconds,
			Stdout: hex.EncodeToString(stdout), Stderr: hex.EncodeToString(stderr), OutCut: boolInt(oCut), ErrCut: boolInt(eCut),
			Owner: b.Owner, SetName: b.SetName, Attempt: b.Attempt, RepSlot: b.ReportedSlotSeconds, RepCPU: b.ReportedCPUSeconds,
			Clamped: boolInt(b.Clamped), Amount: b.Amount}
	}
	buf, err := json.Marshal(ws)
	if err != nil {
		return fmt.Errorf("encode %d ends: %w", len(ins), err)
	}
	rows := string(buf)
	// The sets' counts and billed sums once per set below, not once per
	// row by the triggers (count_pause, migrations 0021 and 0024).
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 1`); err != nil {
		return fmt.Errorf("pause counts: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE copies SET state = 'won', ended_at = ?1, cpu_seconds = j.value->>'u', run_seconds = j.value->>'r',
		outcome = 'won', exit_code = j.value->>'e', signal = j.value->>'g', timed_out = j.value->>'t'
		FROM json_each(?2) j WHERE copies.id = j.value->>'c'`, now, rows); err != nil {
		return fmt.Errorf("end %d copies: %w", len(ins), err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outputs (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
		exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds)
		SELECT j.value->>'s', j.value->>'x', j.value->>'c', j.value->>'w', unhex(j.value->>'o'), unhex(j.value->>'d'), j.value->>'oc', j.value->>'dc',
			j.value->>'e', j.value->>'t', j.value->>'u', j.value->>'r', j.value->>'p'
		FROM json_each(?) j ORDER BY j.key`, rows); err != nil {
		return fmt.Errorf("keep output of %d copies: %w", len(ins), translate(err))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'finished', executed_at = ?1, finished_at = ?1, win_copy = j.value->>'c',
		exit_code = j.value->>'e', timed_out = j.value->>'t', service_seconds = j.value->>'r', visible_response = MAX(0, (?1 - requested_at) / 1e9)
		FROM json_each(?2) j WHERE tasks.set_id = j.value->>'s' AND tasks.idx = j.value->>'x'`, now, rows); err != nil {
		return fmt.Errorf("finish %d tasks: %w", len(ins), err)
	}
	rs, err := tx.QueryContext(ctx, `INSERT INTO bill_lines (owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason,
		kind, price_slot_second, price_cpu_second, amount, reported_slot_seconds, reported_cpu_seconds, clamped, attempt)
		SELECT j.value->>'ow', j.value->>'s', j.value->>'x', j.value->>'sn', j.value->>'c', j.value->>'r', j.value->>'u', ?1, ?2,
			?3, ?4, ?5, j.value->>'am', j.value->>'rs', j.value->>'rc', j.value->>'cl', j.value->>'a'
		FROM json_each(?6) j ORDER BY j.key RETURNING id, copy_id`,
		now, string(sched.BillFinished), string(sched.BillKindCharge), tx.prices.SlotSecond, tx.prices.CPUSecond, rows)
	if err != nil {
		return fmt.Errorf("bill %d tasks: %w", len(ins), translate(err))
	}
	at := make(map[sched.CopyID]int, len(ins))
	for i, in := range ins {
		at[in.Copy] = i
	}
	billed := 0
	for rs.Next() {
		var id int64
		var c sched.CopyID
		if err := rs.Scan(&id, &c); err != nil {
			rs.Close()
			return fmt.Errorf("bill %d tasks: %w", len(ins), err)
		}
		out[at[c]].Result.Bill.ID = id
		billed++
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return fmt.Errorf("bill %d tasks: %w", len(ins), translate(err))
	}
	if billed != len(ins) {
		return fmt.Errorf("bill %d tasks: %d lines written", len(ins), billed)
	}
	// What the triggers would have added row by row: each task went from
	// requested to finished, failed when its exit code or time-out says so.
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET n_requested = n_requested - a.k, n_finished = n_finished + a.k, n_failed = n_failed + a.f,
		sum_visible_response = sum_visible_response + a.v, billed_slot_seconds = billed_slot_seconds + a.b
		FROM (SELECT j.value->>'s' AS id, COUNT(*) AS k, SUM(j.value->>'e' != 0 OR j.value->>'t' != 0) AS f,
			SUM(MAX(0, (?1 - t.requested_at) / 1e9)) AS v, SUM(j.value->>'r') AS b
			FROM json_each(?2) j CROSS JOIN tasks t ON t.set_id = j.value->>'s' AND t.idx = j.value->>'x' GROUP BY 1) a
		WHERE task_sets.id = a.id`, now, rows); err != nil {
		return fmt.Errorf("count %d finished tasks: %w", len(ins), err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE count_pause SET paused = 0`); err != nil {
		return fmt.Errorf("resume counts: %w", err)
	}
	return nil
}
