package store

import (
	"context"
	"fmt"
	"strconv"

	"batchd/sched"
)

// billScan is GetBillGroups summed from the ledger's lines and the copies
// themselves, every call: its cost grows with the ledger. It is what the
// bill was before its running totals (billtotals.go), kept as the tests'
// oracle. Errors: EINVALID (bad page token).
func (db *DB) billScan(ctx context.Context, in BillInput) (Bill, error) {
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
		lines, next, err = billLinesPage(ctx, tx, in, ownerFilter, setFilter, args, after)
		return err
	})
	bill.Lines, bill.Totals, bill.Next = lines, tot, next
	return bill, err
}
