package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"batchd/sched"
)

// dayNanos is the totals' day: bill_days and free_days sum per UTC day of
// billed_at (a copy's ended_at), day = nanos / dayNanos; day -1 sums all
// days, set 0 all of an owner's sets.
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
	// Day -1 is all days' row; lines before 1970 are edge (there are none).
	d0 = max(d0, 0)
	d1 = until / dayNanos
	if d0 >= d1 {
		return 0, 0, until, until
	}
	return d0, d1, d0 * dayNanos, d1 * dayNanos
}

// GetBillGroups is GetBill with the sums per set and per owner. Its sums
// come from running totals (bill_days, free_days): an all-time bill reads
// one row per owner and its largest sets from an index; a range reads the
// rows of its whole days and the lines and free copies of the partial days
// at its edges. Its cost grows with the owners (or sets, for the sums by
// set of a range) and days selected and with one day's lines, not with
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
	q := newBillQuery(in, since, until)
	err = db.read(ctx, func(tx *Tx) error {
		tot := &bill.Totals
		sel, args := q.rows(false)
		if err := tx.QueryRowContext(ctx, sel+`SELECT COALESCE(SUM(lines), 0), COALESCE(SUM(slot), 0), COALESCE(SUM(cpu), 0),
			COALESCE(SUM(req), 0), COALESCE(SUM(amount), 0) FROM u`, args...).
			Scan(&tot.Lines, &tot.BilledSlotSeconds, &tot.BilledCPUSeconds, &tot.RequestedWorkSlotSeconds, &tot.Amount); err != nil {
			return fmt.Errorf("sum bill: %w", err)
		}
		if err := readBillGroups(ctx, tx, &bill.ByOwner, sel+`SELECT owner, 0, '', SUM(lines), SUM(slot), SUM(cpu), SUM(amount)
			FROM u GROUP BY owner ORDER BY SUM(amount) DESC, owner LIMIT ?`, append(args, maxBillGroups)...); err != nil {
			return fmt.Errorf("sum bill by owner: %w", err)
		}
		if q.allTime && in.SetID == 0 {
			// One row per set: the largest from the index (the planner
			// would rather sort every set's row, found by day).
			index := "bill_days_rank"
			if in.Owner != AllOwners {
				index = "bill_days_owner_rank"
			}
			err = readBillGroups(ctx, tx, &bill.BySet, `SELECT owner, set_id, set_name, lines, slot_seconds, cpu_seconds, amount
				FROM bill_days INDEXED BY `+index+` WHERE day = -1 AND set_id != 0 AND `+q.owner+` ORDER BY amount DESC, owner, set_id LIMIT ?`,
				append(append([]any{}, q.ownerArgs...), maxBillGroups)...)
		} else {
			sel, args := q.rows(true)
			err = readBillGroups(ctx, tx, &bill.BySet, sel+`SELECT owner, set_id, MAX(set_name), SUM(lines), SUM(slot), SUM(cpu), SUM(amount)
				FROM u GROUP BY owner, set_id ORDER BY SUM(amount) DESC, owner, set_id LIMIT ?`, append(args, maxBillGroups)...)
		}
		if err != nil {
			return fmt.Errorf("sum bill by set: %w", err)
		}
		sel, args = q.free()
		rows, err := tx.QueryContext(ctx, sel, args...)
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
		args = []any{boolInt(in.Owner == AllOwners), in.Owner, since, until}
		setFilter := ""
		if in.SetID != 0 {
			setFilter, args = " AND set_id = ?", append(args, in.SetID)
		}
		bill.Lines, bill.Next, err = billLinesPage(ctx, tx, in, "(? = 1 OR owner = ?)", setFilter, args, after)
		return err
	})
	return bill, err
}

// billQuery builds a bill's sums from the totals and the edges' lines.
type billQuery struct {
	allTime   bool
	owner     string // the owner filter: "1" or "owner = ?"
	ownerArgs []any
	set       sched.SetID
	days      string // the totals' days: "day = -1" or a range
	dayArgs   []any
	// edges are the partial days' ranges, [since, e0) and [e1, until).
	edges [2][2]int64
}

func newBillQuery(in BillInput, since, until int64) billQuery {
	q := billQuery{owner: "1", set: in.SetID}
	if in.Owner != AllOwners {
		q.owner, q.ownerArgs = "owner = ?", []any{in.Owner}
	}
	if since <= 0 && until == 1<<63-1 {
		q.allTime, q.days = true, "day = -1"
		return q
	}
	d0, d1, e0, e1 := billSpan(since, until)
	q.days, q.dayArgs = "day >= ? AND day < ?", []any{d0, d1}
	q.edges = [2][2]int64{{since, e0}, {e1, until}}
	return q
}

// filter returns the owner and set filter of a totals table's rows
// (bySet: the sets' rows, else the owners' (set 0) unless one set is
// selected) and its arguments.
func (q billQuery) filter(bySet bool) (string, []any) {
	f, args := q.owner+" AND "+q.days, append(append([]any{}, q.ownerArgs...), q.dayArgs...)
	switch {
	case q.set != 0:
		return f + " AND set_id = ?", append(args, q.set)
	case bySet:
		return f + " AND set_id != 0", args
	}
	return f + " AND set_id = 0", args
}

// edge returns the owner, set and time filter of the lines or free
// copies (column at) of edge k.
func (q billQuery) edge(k int, at string) (string, []any) {
	f, args := q.owner+" AND "+at+" >= ? AND "+at+" < ?", append(append([]any{}, q.ownerArgs...), q.edges[k][0], q.edges[k][1])
	if q.set != 0 {
		return f + " AND set_id = ?", append(args, q.set)
	}
	return f, args
}

// rows returns a WITH clause naming u the rows to sum (owner, set_id,
// set_name, lines, slot, cpu, req, amount), and its arguments.
func (q billQuery) rows(bySet bool) (string, []any) {
	f, args := q.filter(bySet)
	sel := `WITH u (owner, set_id, set_name, lines, slot, cpu, req, amount) AS (
		SELECT owner, set_id, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount FROM bill_days WHERE ` + f
	if !q.allTime {
		for k := range q.edges {
			f, a := q.edge(k, "billed_at")
			sel += ` UNION ALL SELECT owner, set_id, set_name, 1, slot_seconds, cpu_seconds,
				CASE WHEN reason NOT IN ('canceled-after-request', 'correction') THEN slot_seconds ELSE 0 END, amount
				FROM bill_lines WHERE ` + f
			args = append(args, a...)
		}
	}
	return sel + ") ", args
}

// free returns the query of the free work's sums by part.
func (q billQuery) free() (string, []any) {
	f, args := q.filter(false)
	sel := `SELECT part, SUM(s) FROM (SELECT part, seconds AS s FROM free_days WHERE ` + f
	if !q.allTime {
		for k := range q.edges {
			f, a := q.edge(k, "ended_at")
			sel += ` UNION ALL SELECT part, run FROM free_copies WHERE ` + f
			args = append(args, a...)
		}
	}
	return sel + `) GROUP BY part`, args
}

// readBillGroups appends the groups query q reads to out.
func readBillGroups(ctx context.Context, tx *Tx, out *[]BillGroup, q string, args ...any) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b BillGroup
		if err := rows.Scan(&b.Owner, &b.Set, &b.SetName, &b.Lines, &b.SlotSeconds, &b.CPUSeconds, &b.Amount); err != nil {
			return err
		}
		*out = append(*out, b)
	}
	return rows.Err()
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
// with one UPSERT per row: a group commit's lines cost four statements
// per set they bill (billDays.write), not one per line.
type billDays struct {
	keys    []billDayKey
	sums    map[billDayKey]*billDaySum
	last    *billDaySum // the last line's row: a group's lines come by set
	lastKey billDayKey
}

// add counts line b in its set's row of its day.
func (d *billDays) add(b sched.BillLine) {
	k := billDayKey{b.Owner, b.Task.Set, nanos(b.BilledAt) / dayNanos}
	s := d.last
	if s == nil || k != d.lastKey {
		if d.sums == nil {
			d.sums = map[billDayKey]*billDaySum{}
		}
		if s = d.sums[k]; s == nil {
			s = &billDaySum{setName: b.SetName}
			d.sums[k] = s
			d.keys = append(d.keys, k)
		}
		d.last, d.lastKey = s, k
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

// write adds the accumulated sums to bill_days: each set's row of its day
// also to its owner's (set 0), and both to all days' (-1).
func (d *billDays) write(ctx context.Context, tx *Tx) error {
	type row struct {
		k billDayKey
		s billDaySum
	}
	// A group commit's lines are of a set or a few: its rows are found
	// by a look along them, no map (fewer allocations per commit), until
	// there are many.
	rows := make([]row, 0, 4*len(d.keys))
	var at map[billDayKey]int
	find := func(k billDayKey) *billDaySum {
		if at != nil {
			if i, ok := at[k]; ok {
				return &rows[i].s
			}
		} else {
			for i := range rows {
				if rows[i].k == k {
					return &rows[i].s
				}
			}
		}
		rows = append(rows, row{k: k})
		if at == nil && len(rows) > 16 {
			at = make(map[billDayKey]int, 2*len(rows))
			for i := range rows {
				at[rows[i].k] = i
			}
		} else if at != nil {
			at[k] = len(rows) - 1
		}
		return &rows[len(rows)-1].s
	}
	for _, k := range d.keys {
		s := d.sums[k]
		for _, r := range [4]billDayKey{k, {k.owner, 0, k.day}, {k.owner, k.set, -1}, {k.owner, 0, -1}} {
			t := find(r)
			if r.set != 0 {
				t.setName = max(t.setName, s.setName)
			}
			t.lines += s.lines
			t.slot += s.slot
			t.cpu += s.cpu
			t.req += s.req
			t.amount += s.amount
		}
	}
	if len(rows) == 0 {
		return nil
	}
	// One statement for all rows: each statement is prepared anew.
	vals := make([]any, 0, 9*len(rows))
	for _, r := range rows {
		vals = append(vals, r.k.owner, int64(r.k.set), r.k.day, r.s.setName, r.s.lines, r.s.slot, r.s.cpu, r.s.req, r.s.amount)
	}
	// Run as a query: its values bound in the step's cgo call, not one
	// call each (execQuery).
	if err := execQuery(ctx, tx, billDaysSQL(len(rows)), vals...); err != nil {
		return fmt.Errorf("add to the bill's totals: %w", err)
	}
	return nil
}

// billDaysTexts holds billDaysSQL's statements by their number of rows.
var billDaysTexts sync.Map // int → string

// billDaysSQL is the UPSERT of n bill_days rows, made once per n.
func billDaysSQL(n int) string {
	if q, ok := billDaysTexts.Load(n); ok {
		return q.(string)
	}
	marks := make([]string, n)
	for i := range marks {
		marks[i] = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
	}
	q := `INSERT INTO bill_days (owner, set_id, day, set_name, lines, slot_seconds, cpu_seconds, requested_slot_seconds, amount)
		VALUES ` + strings.Join(marks, ", ") + ` ON CONFLICT (owner, set_id, day) DO UPDATE SET set_name = MAX(set_name, excluded.set_name),
		lines = lines + excluded.lines, slot_seconds = slot_seconds + excluded.slot_seconds, cpu_seconds = cpu_seconds + excluded.cpu_seconds,
		requested_slot_seconds = requested_slot_seconds + excluded.requested_slot_seconds, amount = amount + excluded.amount`
	billDaysTexts.Store(n, q)
	return q
}

// addBillLine adds one line to the bill's totals.
func addBillLine(ctx context.Context, tx *Tx, b sched.BillLine) error {
	var d billDays
	d.add(b)
	return d.write(ctx, tx)
}
