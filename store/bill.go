package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"batchd/sched"
)

// BillInput selects a bill: the owner's lines (every owner's with
// AllOwners) billed in [Since, Until) (zero times leave that end open),
// optionally of one set.
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
// copies of the owner's sets that ended in the range and were not billed,
// in the four parts of sched.FreeParts.
// Errors: EINVALID (bad page token).
func (db *DB) GetBill(ctx context.Context, in BillInput) ([]sched.BillLine, sched.BillTotals, string, error) {
	b, err := db.GetBillGroups(ctx, in)
	return b.Lines, b.Totals, b.Next, err
}

// BillGroup sums the lines of one owner (Set 0) or one task set.
type BillGroup struct {
	Owner       string
	Set         sched.SetID
	SetName     string
	Lines       int64
	SlotSeconds float64
	CPUSeconds  float64
	Amount      float64
}

// Bill is a page of lines, the totals of the whole selection and its sums
// per set and per owner.
type Bill struct {
	Lines          []sched.BillLine
	Totals         sched.BillTotals
	Next           string
	BySet, ByOwner []BillGroup
}

// maxBillGroups bounds the per-set and per-owner sums of one bill.
const maxBillGroups = 1000

// GetBillGroups is GetBill with the sums per set and per owner.
// Errors: EINVALID (bad page token).
func (db *DB) GetBillGroups(ctx context.Context, in BillInput) (Bill, error) {
	var (
		lines []sched.BillLine
		tot   sched.BillTotals
		next  string
		bill  Bill
	)
	since, until := nanos(in.Since), nanos(in.Until)
	if in.Until.IsZero() {
		until = 1<<63 - 1
	}
	after := int64(0)
	if in.PageToken != "" {
		n, err := strconv.ParseInt(in.PageToken, 10, 64)
		if err != nil || n < 0 {
			return bill, sched.Errorf(sched.EINVALID, "bad page token %q", in.PageToken)
		}
		after = n
	}
	// ownerFilter matches nothing but AllOwners when the owner is AllOwners.
	const ownerFilter = "(? = 1 OR owner = ?)"
	setFilter, args := "", []any{boolInt(in.Owner == AllOwners), in.Owner, since, until}
	if in.SetID != 0 {
		setFilter, args = " AND set_id = ?", append(args, in.SetID)
	}
	err := db.read(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(slot_seconds), 0), COALESCE(SUM(cpu_seconds), 0),
			COALESCE(SUM(CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END), 0),
			COALESCE(SUM(amount), 0)
			FROM bill_lines WHERE `+ownerFilter+` AND billed_at >= ? AND billed_at < ?`+setFilter, args...).
			Scan(&tot.Lines, &tot.BilledSlotSeconds, &tot.BilledCPUSeconds, &tot.RequestedWorkSlotSeconds, &tot.Amount); err != nil {
			return fmt.Errorf("sum bill: %w", err)
		}
		for _, g := range []struct {
			by  string
			out *[]BillGroup
		}{{"owner, set_id", &bill.BySet}, {"owner", &bill.ByOwner}} {
			cols := "owner, 0, ''"
			if g.by != "owner" {
				cols = "owner, set_id, MAX(set_name)"
			}
			rows, err := tx.QueryContext(ctx, `SELECT `+cols+`, COUNT(*), SUM(slot_seconds), SUM(cpu_seconds), SUM(amount)
				FROM bill_lines WHERE `+ownerFilter+` AND billed_at >= ? AND billed_at < ?`+setFilter+`
				GROUP BY `+g.by+` ORDER BY SUM(amount) DESC, `+g.by+` LIMIT ?`, append(args, maxBillGroups)...)
			if err != nil {
				return fmt.Errorf("sum bill by %s: %w", g.by, err)
			}
			for rows.Next() {
				var b BillGroup
				if err := rows.Scan(&b.Owner, &b.Set, &b.SetName, &b.Lines, &b.SlotSeconds, &b.CPUSeconds, &b.Amount); err != nil {
					rows.Close()
					return err
				}
				*g.out = append(*g.out, b)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		copyFilter := ""
		if in.SetID != 0 {
			copyFilter = " AND c.set_id = ?"
		}
		free, err := tx.QueryContext(ctx, `SELECT part, SUM(run) FROM (SELECT `+freePartSQL+` AS part, c.run_seconds AS run
			FROM copies c JOIN task_sets s ON s.id = c.set_id JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx`+attemptJoin+`
			WHERE (? = 1 OR s.owner = ?) AND c.ended_at >= ? AND c.ended_at < ? AND c.ended_at > 0`+copyFilter+`)
			WHERE part != '' GROUP BY part`, args...)
		if err != nil {
			return fmt.Errorf("sum free work: %w", err)
		}
		for free.Next() {
			var (
				part string
				v    float64
			)
			if err := free.Scan(&part, &v); err != nil {
				free.Close()
				return err
			}
			tot.Free.Add(sched.FreePart(part), v)
		}
		free.Close()
		if err := free.Err(); err != nil {
			return err
		}
		tot.FreeSlotSeconds = tot.Free.Total()
		if tot.RequestedWorkSlotSeconds > 0 {
			tot.ScaledBilledResources = tot.BilledSlotSeconds / tot.RequestedWorkSlotSeconds
		}
		if !in.IncludeLines {
			return nil
		}
		size := clampPage(in.PageSize, DefaultBillPage, MaxBillPage)
		rows, err := tx.QueryContext(ctx, `SELECT id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason,
			kind, price_slot_second, price_cpu_second, amount, corrects, note,
			COALESCE(reported_slot_seconds, slot_seconds), COALESCE(reported_cpu_seconds, cpu_seconds), clamped, attempt
			FROM bill_lines WHERE `+ownerFilter+` AND billed_at >= ? AND billed_at < ?`+setFilter+` AND id > ? ORDER BY id LIMIT ?`,
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
			if err := rows.Scan(&b.ID, &b.Owner, &b.Task.Set, &b.Task.Index, &b.SetName, &b.Copy, &b.SlotSeconds, &b.CPUSeconds, &at, &b.Reason,
				&b.Kind, &b.PriceSlotSecond, &b.PriceCPUSecond, &b.Amount, &b.Corrects, &b.Note,
				&b.ReportedSlotSeconds, &b.ReportedCPUSeconds, &b.Clamped, &b.Attempt); err != nil {
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
	bill.Lines, bill.Totals, bill.Next = lines, tot, next
	return bill, err
}

// CorrectInput amends a ledger line with a new line: the seconds to add
// (negative to take off) and why.
type CorrectInput struct {
	Line                    int64
	SlotSeconds, CPUSeconds float64
	Note                    string
}

// CorrectBill appends a correction line to the ledger, for the owner, task
// and copy of the line it corrects, priced at the current prices. The
// ledger is never edited. Errors: ENOTFOUND (no such line), EINVALID (no
// note, or nothing to correct).
func (db *DB) CorrectBill(ctx context.Context, in CorrectInput) (sched.BillLine, error) {
	if in.Note == "" {
		return sched.BillLine{}, sched.Errorf(sched.EINVALID, "a correction needs a note saying why")
	}
	if in.SlotSeconds == 0 && in.CPUSeconds == 0 {
		return sched.BillLine{}, sched.Errorf(sched.EINVALID, "a correction must change slot or CPU seconds")
	}
	var b sched.BillLine
	err := db.write(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT owner, set_id, idx, set_name, copy_id, attempt FROM bill_lines WHERE id = ?`, in.Line).
			Scan(&b.Owner, &b.Task.Set, &b.Task.Index, &b.SetName, &b.Copy, &b.Attempt)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "no bill line %d", in.Line)
		}
		if err != nil {
			return fmt.Errorf("read bill line: %w", err)
		}
		b.Kind, b.Reason, b.Corrects, b.Note = sched.BillKindCorrection, sched.BillCorrection, in.Line, in.Note
		b.SlotSeconds, b.CPUSeconds, b.BilledAt = in.SlotSeconds, in.CPUSeconds, tx.now
		b.PriceSlotSecond, b.PriceCPUSecond = tx.prices.SlotSecond, tx.prices.CPUSecond
		b.Amount = tx.prices.Amount(b.SlotSeconds, b.CPUSeconds)
		r, err := tx.ExecContext(ctx, `INSERT INTO bill_lines (owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason,
			kind, price_slot_second, price_cpu_second, amount, corrects, note, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.Owner, b.Task.Set, b.Task.Index, b.SetName, b.Copy, b.SlotSeconds, b.CPUSeconds, nanos(b.BilledAt), b.Reason,
			b.Kind, b.PriceSlotSecond, b.PriceCPUSecond, b.Amount, b.Corrects, b.Note, b.Attempt)
		if err != nil {
			return fmt.Errorf("insert correction: %w", err)
		}
		b.ID, _ = r.LastInsertId()
		return nil
	})
	return b, err
}
