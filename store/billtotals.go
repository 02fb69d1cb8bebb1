package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"batchd/sched"
)

// dayNanos is the totals' day: bill_days and free_days sum per UTC day of
// billed_at (a copy's ended_at), day = nanos / dayNanos.
const dayNanos = int64(24 * time.Hour)

// billSpan splits a bill's range [since, until) into the whole days
// [d0, d1) that the totals hold and at most two edges, [since, e0) and
// [e1, until), that are summed from the lines themselves (an index on
// billed_at finds them). A range within one day is all edge.
func billSpan(since, until int64) (d0, d1, e0, e1 int64) {
	d0 = since / dayNanos
	if d0*dayNanos < since {
		d0++
	}
	d1 = until / dayNanos
	if d0 >= d1 {
		return 0, 0, until, until
	}
	return d0, d1, d0 * dayNanos, d1 * dayNanos
}

// GetBillGroups is GetBill with the sums per set and per owner. Its sums
// come from running totals per owner, set and UTC day (bill_days,
// free_days) for the range's whole days, and from the lines and free
// copies of the range's partial days at its edges, so that its cost grows
// with the owners, sets and days selected and one day's lines, not with
// the ledger. It gives what summing every line and copy gives (billScan),
// up to the order in which floating-point seconds are added.
// Errors: EINVALID (bad page token).
func (db *DB) GetBillGroups(ctx context.Context, in BillInput) (Bill, error) {
	var bill Bill
	since, until := nanos(in.Since), nanos(in.Until)
	if in.Until.IsZero() {
		until = 1<<63 - 1
	}
	after, err := billPageToken(in.PageToken)
	if err != nil {
		return bill, err
	}
	d0, d1, e0, e1 := billSpan(since, until)
	const ownerFilter = "(? = 1 OR owner = ?)"
	setFilter, sel := "", []any{boolInt(in.Owner == AllOwners), in.Owner}
	if in.SetID != 0 {
		setFilter = " AND set_id = ?"
	}
	// part binds the selection's parameters for one branch below.
	part := func(args ...any) []any {
		out := append(append([]any{}, sel...), args...)
		if in.SetID != 0 {
			out = append(out, in.SetID)
		}
		return out
	}
	var args []any
	args = append(args, part(d0, d1)...)
	args = append(args, part(since, e0)...)
	args = append(args, part(e1, until)...)
	const reqWork = `CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END`
	lines := `SELECT owner, set_id, set_name, 1, slot_seconds, cpu_seconds, ` + reqWork + `, amount FROM bill_lines
		WHERE ` + ownerFilter + ` AND billed_at >= ? AND billed_at < ?` + setFilter
	u := `WITH u (owner, set_id, set_name, lines, slot, cpu, req, amount) AS (
		SELECT owner, set_id, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount FROM bill_days
		WHERE ` + ownerFilter + ` AND day >= ? AND day < ?` + setFilter + `
		UNION ALL ` + lines + ` UNION ALL ` + lines + `) `
	free := `SELECT part, SUM(s) FROM (
		SELECT part, seconds AS s FROM free_days WHERE ` + ownerFilter + ` AND day >= ? AND day < ?` + setFilter + `
		UNION ALL SELECT part, run FROM free_copies WHERE ` + ownerFilter + ` AND ended_at >= ? AND ended_at < ?` + setFilter + `
		UNION ALL SELECT part, run FROM free_copies WHERE ` + ownerFilter + ` AND ended_at >= ? AND ended_at < ?` + setFilter + `)
		GROUP BY part`
	err = db.read(ctx, func(tx *Tx) error {
		tot := &bill.Totals
		if err := tx.QueryRowContext(ctx, u+`SELECT COALESCE(SUM(lines), 0), COALESCE(SUM(slot), 0), COALESCE(SUM(cpu), 0),
			COALESCE(SUM(req), 0), COALESCE(SUM(amount), 0) FROM u`, args...).
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
			rows, err := tx.QueryContext(ctx, u+`SELECT `+cols+`, SUM(lines), SUM(slot), SUM(cpu), SUM(amount)
				FROM u GROUP BY `+g.by+` ORDER BY SUM(amount) DESC, `+g.by+` LIMIT ?`, append(args, maxBillGroups)...)
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
		rows, err := tx.QueryContext(ctx, free, args...)
		if err != nil {
			return fmt.Errorf("sum free work: %w", err)
		}
		for rows.Next() {
			var (
				p string
				v float64
			)
			if err := rows.Scan(&p, &v); err != nil {
				rows.Close()
				return err
			}
			tot.Free.Add(sched.FreePart(p), v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		tot.FreeSlotSeconds = tot.Free.Total()
		if tot.RequestedWorkSlotSeconds > 0 {
			tot.ScaledBilledResources = tot.BilledSlotSeconds / tot.RequestedWorkSlotSeconds
		}
		bill.Lines, bill.Next, err = billLinesPage(ctx, tx, in, ownerFilter, setFilter, part(since, until), after)
		return err
	})
	return bill, err
}

// billPageToken parses a bill's page token: the last line's id.
// Errors: EINVALID.
func billPageToken(tok string) (int64, error) {
	if tok == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || n < 0 {
		return 0, sched.Errorf(sched.EINVALID, "bad page token %q", tok)
	}
	return n, nil
}

// billLinesPage reads the page of lines after line id after (with
// in.IncludeLines; none without), selected by the filters and their args
// (owner, billed_at range, set), and the next page's token.
func billLinesPage(ctx context.Context, tx *Tx, in BillInput, ownerFilter, setFilter string, args []any, after int64) ([]sched.BillLine, string, error) {
	if !in.IncludeLines {
		return nil, "", nil
	}
	var lines []sched.BillLine
	size := clampPage(in.PageSize, DefaultBillPage, MaxBillPage)
	rows, err := tx.QueryContext(ctx, `SELECT id, owner, set_id, idx, set_name, copy_id, slot_seconds, cpu_seconds, billed_at, reason,
		kind, price_slot_second, price_cpu_second, amount, corrects, note,
		COALESCE(reported_slot_seconds, slot_seconds), COALESCE(reported_cpu_seconds, cpu_seconds), clamped, attempt
		FROM bill_lines WHERE `+ownerFilter+` AND billed_at >= ? AND billed_at < ?`+setFilter+` AND id > ? ORDER BY id LIMIT ?`,
		append(append([]any{}, args...), after, size+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("read bill lines: %w", err)
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
			return nil, "", err
		}
		b.BilledAt = fromNanos(at)
		lines = append(lines, b)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(lines) > size {
		lines = lines[:size]
		next = strconv.FormatInt(lines[size-1].ID, 10)
	}
	return lines, next, nil
}

// billDayKey names a bill_days row.
type billDayKey struct {
	owner string
	set   sched.SetID
	day   int64
}

// billDaySum is what a transaction's lines add to one bill_days row.
type billDaySum struct {
	setName                string
	lines                  int64
	slot, cpu, req, amount float64
}

// billDays accumulates a transaction's new ledger lines per owner, set and
// day, in the order the rows first appear, and adds them to bill_days
// with one UPSERT per row: a group commit's lines cost one statement per
// set they bill, not one per line.
type billDays struct {
	keys []billDayKey
	sums map[billDayKey]*billDaySum
}

// add counts line b.
func (d *billDays) add(b sched.BillLine) {
	k := billDayKey{b.Owner, b.Task.Set, nanos(b.BilledAt) / dayNanos}
	if d.sums == nil {
		d.sums = map[billDayKey]*billDaySum{}
	}
	s := d.sums[k]
	if s == nil {
		s = &billDaySum{setName: b.SetName}
		d.sums[k] = s
		d.keys = append(d.keys, k)
	}
	s.setName = max(s.setName, b.SetName)
	s.lines++
	s.slot += b.SlotSeconds
	s.cpu += b.CPUSeconds
	if b.Reason != sched.BillCanceledAfterRequest && b.Reason != sched.BillCorrection {
		s.req += b.SlotSeconds
	}
	s.amount += b.Amount
}

// write adds the accumulated sums to bill_days.
func (d *billDays) write(ctx context.Context, tx *Tx) error {
	for _, k := range d.keys {
		s := d.sums[k]
		if _, err := tx.ExecContext(ctx, `INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, set_id, day) DO UPDATE SET set_name = MAX(set_name, excluded.set_name),
			lines = lines + excluded.lines, slot_seconds = slot_seconds + excluded.slot_seconds, cpu_seconds = cpu_seconds + excluded.cpu_seconds,
			requested_slot_seconds = requested_slot_seconds + excluded.requested_slot_seconds, amount = amount + excluded.amount`,
			k.owner, k.set, k.day, s.setName, s.lines, s.slot, s.cpu, s.req, s.amount); err != nil {
			return fmt.Errorf("add to the bill's totals: %w", err)
		}
	}
	return nil
}

// addBillLine adds one line to the bill's totals.
func addBillLine(ctx context.Context, tx *Tx, b sched.BillLine) error {
	var d billDays
	d.add(b)
	return d.write(ctx, tx)
}
