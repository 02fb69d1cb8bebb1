package store

import (
	"context"
	"database/sql"
	"fmt"

	"batchd/sched"
)

// The free work's totals (free_copies, free_days: migration 0034) hold
// every ended copy whose run is free work now, in the part freePartSQL
// gives it now. A copy's part is a function of its own row (state, end,
// run time), its attempt's state and winner (the task's row for the
// current attempt, task_attempts' for an earlier one) and whether a charge
// names it. So it can change only when one of these does:
//
//   - the copy ends, or its late report rewrites its run time (finishCopy,
//     a kill decision, a lost copy or worker);
//   - its task is canceled (a killed copy of a task without a winner goes
//     from speculative_lost to canceled, or to nothing when the cancel
//     bills it as canceled-after-request);
//   - its executed task is requested (the winner goes from
//     executed_unrequested to nothing: it is billed, and every charge
//     marks its task, insertBill);
//   - its task is retried (the attempt's row moves to task_attempts with
//     the same state and winner, which leaves parts as they were; refreshed
//     anyway).
//
// Each of these marks its task (or its whole set) in the transaction, and
// the write refreshes the marked tasks' rows before it commits
// (refreshFree). Nothing else moves a part:
//
//   - a requested task's winner written by the group commit (writeWinners)
//     is billed, so it is no free work, and the task's earlier killed copies
//     were speculative_lost before (no winner, not canceled) and still are
//     (a winner that is not them): the group commit marks nothing;
//   - a disclosed task requested (disclosed to requested) keeps every
//     part: its copies can be killed or lost, not won, and killed ones are
//     speculative_lost either way.
//
// TestBillTotalsSameAsScan checks the rule against the scan over random
// histories.

// freeDirty is the tasks and sets a write transaction marked for
// refreshFree, in the order they were marked.
type freeDirty struct {
	tasks  []sched.TaskRef
	sets   []sched.SetID
	copies []sched.CopyID
	seen   map[sched.TaskRef]bool
}

// markFreeTask marks task ref's free copies for a refresh at commit.
func (tx *Tx) markFreeTask(ref sched.TaskRef) {
	if tx.free == nil {
		tx.free = &freeDirty{seen: map[sched.TaskRef]bool{}}
	}
	if !tx.free.seen[ref] {
		tx.free.seen[ref] = true
		tx.free.tasks = append(tx.free.tasks, ref)
	}
}

// markFreeSet marks every task of set id.
func (tx *Tx) markFreeSet(id sched.SetID) {
	if tx.free == nil {
		tx.free = &freeDirty{seen: map[sched.TaskRef]bool{}}
	}
	tx.free.sets = append(tx.free.sets, id)
}

// markFreeCopy marks the task of copy id.
func (tx *Tx) markFreeCopy(id sched.CopyID) {
	if tx.free == nil {
		tx.free = &freeDirty{seen: map[sched.TaskRef]bool{}}
	}
	tx.free.copies = append(tx.free.copies, id)
}

// freeRow is one free_copies row.
type freeRow struct {
	owner   string
	set     sched.SetID
	idx     int32
	endedAt int64
	part    string
	run     float64
}

// freeDayKey names a free_days row.
type freeDayKey struct {
	owner string
	set   sched.SetID
	day   int64
	part  string
}

// refreshFree brings the free copies of the tasks and sets the
// transaction marked up to date, and their days' sums with them: only the
// copies whose row changed move the sums.
func (tx *Tx) refreshFree(ctx context.Context) error {
	d := tx.free
	if d == nil {
		return nil
	}
	tx.free = nil
	for _, id := range d.copies {
		var ref sched.TaskRef
		err := tx.QueryRowContext(ctx, `SELECT set_id, idx FROM copies WHERE id = ?`, id).Scan(&ref.Set, &ref.Index)
		if err == sql.ErrNoRows {
			continue // a decision on no copy: it changed nothing
		} else if err != nil {
			return fmt.Errorf("free work of copy %d: %w", id, err)
		}
		if !d.seen[ref] {
			d.seen[ref] = true
			d.tasks = append(d.tasks, ref)
		}
	}
	var (
		keys []freeDayKey
		sums = map[freeDayKey]float64{}
	)
	// Each copy counts in four rows, as a line does in bill_days.
	add := func(r freeRow, sign float64) {
		day := r.endedAt / dayNanos
		for _, k := range [4]freeDayKey{{r.owner, r.set, day, r.part}, {r.owner, 0, day, r.part}, {r.owner, r.set, -1, r.part}, {r.owner, 0, -1, r.part}} {
			if _, ok := sums[k]; !ok {
				keys = append(keys, k)
			}
			sums[k] += sign * r.run
		}
	}
	refresh := func(where string, args ...any) error {
		oldIDs, old, err := readFreeRows(ctx, tx, `SELECT copy_id, owner, set_id, idx, ended_at, part, run FROM free_copies WHERE `+where+` ORDER BY copy_id`, args...)
		if err != nil {
			return err
		}
		nowIDs, now, err := readFreeRows(ctx, tx, `SELECT * FROM (SELECT c.id, s.owner, c.set_id, c.idx, c.ended_at, `+freePartSQL+` AS part, c.run_seconds
			FROM copies c JOIN task_sets s ON s.id = c.set_id JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx`+attemptJoin+`
			WHERE c.ended_at > 0 AND `+qualify(where)+`) WHERE part != '' ORDER BY 1`, args...)
		if err != nil {
			return err
		}
		for _, id := range oldIDs {
			o := old[id]
			if n, ok := now[id]; ok && n == o {
				continue
			}
			add(o, -1)
			if _, err := tx.ExecContext(ctx, `DELETE FROM free_copies WHERE copy_id = ?`, id); err != nil {
				return fmt.Errorf("free work of copy %d: %w", id, err)
			}
		}
		for _, id := range nowIDs {
			n := now[id]
			if o, ok := old[id]; ok && n == o {
				continue
			}
			add(n, 1)
			if _, err := tx.ExecContext(ctx, `INSERT INTO free_copies (copy_id, owner, set_id, idx, ended_at, part, run) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				id, n.owner, n.set, n.idx, n.endedAt, n.part, n.run); err != nil {
				return fmt.Errorf("free work of copy %d: %w", id, err)
			}
		}
		return nil
	}
	for _, id := range d.sets {
		if err := refresh(`set_id = +?`, id); err != nil {
			return err
		}
	}
	for _, ref := range d.tasks {
		if err := refresh(`set_id = +? AND idx = +?`, ref.Set, ref.Index); err != nil {
			return err
		}
	}
	// The sums in the order they first changed: copies in id order, the
	// marked sets and tasks in the order they were marked.
	for _, k := range keys {
		v := sums[k]
		if v == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO free_days (owner, set_id, day, part, seconds) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (owner, set_id, day, part) DO UPDATE SET seconds = seconds + excluded.seconds`, k.owner, k.set, k.day, k.part, v); err != nil {
			return fmt.Errorf("add to the free work's totals: %w", err)
		}
	}
	return nil
}

// qualify names the copies' columns of a free_copies filter.
func qualify(where string) string {
	switch where {
	case `set_id = +?`:
		return `c.set_id = +?`
	case `set_id = +? AND idx = +?`:
		return `c.set_id = +? AND c.idx = +?`
	}
	panic("qualify: unknown filter " + where)
}

// readFreeRows reads free rows: their copies' ids in the query's order,
// and the rows by id.
func readFreeRows(ctx context.Context, tx *Tx, q string, args ...any) ([]sched.CopyID, map[sched.CopyID]freeRow, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("read free work: %w", err)
	}
	defer rows.Close()
	var ids []sched.CopyID
	out := map[sched.CopyID]freeRow{}
	for rows.Next() {
		var (
			id sched.CopyID
			r  freeRow
		)
		if err := rows.Scan(&id, &r.owner, &r.set, &r.idx, &r.endedAt, &r.part, &r.run); err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		out[id] = r
	}
	return ids, out, rows.Err()
}
