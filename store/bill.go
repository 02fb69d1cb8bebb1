package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"batchd/sched"
)

// BillInput selects a bill: the owner's lines billed in [Since, Until)
// (zero times leave that end open), optionally of one set.
type BillInput struct {
	Owner        string
	Since, Until time.Time
	SetID        sched.SetID
	IncludeLines bool
	PageSize     int32
	PageToken    string
}

// GetBill returns a page of bill lines (with IncludeLines), the totals of
// the whole selection, and the next page's token. Free slot-seconds are the
// copies of the owner's sets that ended in the range and were not billed.
// Errors: EINVALID (bad page token).
func (db *DB) GetBill(ctx context.Context, in BillInput) ([]sched.BillLine, sched.BillTotals, string, error) {
	var (
		lines []sched.BillLine
		tot   sched.BillTotals
		next  string
	)
	since, until := nanos(in.Since), nanos(in.Until)
	if in.Until.IsZero() {
		until = 1<<63 - 1
	}
	after := int64(0)
	if in.PageToken != "" {
		n, err := strconv.ParseInt(in.PageToken, 10, 64)
		if err != nil || n < 0 {
			return nil, tot, "", sched.Errorf(sched.EINVALID, "bad page token %q", in.PageToken)
		}
		after = n
	}
	setFilter, args := "", []any{in.Owner, since, until}
	if in.SetID != 0 {
		setFilter, args = " AND set_id = ?", append(args, in.SetID)
	}
	err := db.read(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(slot_seconds), 0), COALESCE(SUM(cpu_seconds), 0),
			COALESCE(SUM(CASE WHEN reason != 'canceled-after-request' THEN slot_seconds ELSE 0 END), 0)
			FROM bill_lines WHERE owner = ? AND billed_at >= ? AND billed_at < ?`+setFilter, args...).
			Scan(&tot.Lines, &tot.BilledSlotSeconds, &tot.BilledCPUSeconds, &tot.RequestedWorkSlotSeconds); err != nil {
			return fmt.Errorf("sum bill: %w", err)
		}
		copyFilter := ""
		if in.SetID != 0 {
			copyFilter = " AND c.set_id = ?"
		}
		var all, waste, executed float64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(c.run_seconds), 0),
			COALESCE(SUM(CASE WHEN c.state IN ('killed', 'lost') THEN c.run_seconds ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN c.state = 'won' AND t.state IN ('executed', 'canceled') THEN c.run_seconds ELSE 0 END), 0)
			FROM copies c JOIN task_sets s ON s.id = c.set_id JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx
			WHERE s.owner = ? AND c.ended_at >= ? AND c.ended_at < ? AND c.ended_at > 0`+copyFilter, args...).
			Scan(&all, &waste, &executed); err != nil {
			return fmt.Errorf("sum copies: %w", err)
		}
		tot.SpeculativeWasteSlotSeconds = waste
		tot.ExecutedUnrequestedSlotSeconds = executed
		tot.FreeSlotSeconds = waste + executed
		if tot.RequestedWorkSlotSeconds > 0 {
			tot.ScaledBilledResources = tot.BilledSlotSeconds / tot.RequestedWorkSlotSeconds
		}
		if !in.IncludeLines {
			return nil
		}
		size := clampPage(in.PageSize, DefaultBillPage, MaxBillPage)
		rows, err := tx.QueryContext(ctx, `SELECT id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason
			FROM bill_lines WHERE owner = ? AND billed_at >= ? AND billed_at < ?`+setFilter+` AND id > ? ORDER BY id LIMIT ?`,
			append(args, after, size+1)...)
		if err != nil {
			return fmt.Errorf("read bill lines: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				b  sched.BillLine
				at int64
			)
			if err := rows.Scan(&b.ID, &b.Owner, &b.Task.Set, &b.Task.Index, &b.SetName, &b.Copy, &b.SlotSeconds, &b.CPUSeconds, &at, &b.Reason); err != nil {
				return err
			}
			b.BilledAt = fromNanos(at)
			lines = append(lines, b)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(lines) > size {
			lines = lines[:size]
			next = strconv.FormatInt(lines[size-1].ID, 10)
		}
		return nil
	})
	return lines, tot, next, err
}
