package store

import (
	"context"
	"database/sql"
	"fmt"
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
		return addBillLine(ctx, tx, b)
	})
	return b, err
}
