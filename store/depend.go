// Set dependencies: what a set disclosed with --after waits for, and the
// pass that releases or cancels waiting sets once what they wait for has
// ended (sched.Resolve decides; this file reads the outcomes and writes
// the verdict).

package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"batchd/sched"
)

// DepResolution is what the dependency pass did to one waiting set.
type DepResolution struct {
	Set   sched.SetID
	Owner string
	// Verdict is VerdictRelease (its tasks may run now) or VerdictCancel
	// (canceled: Reason says which dependency failed, Canceled lists its
	// tasks the pass canceled).
	Verdict  sched.Verdict
	Reason   string
	Canceled []int32
}

// DepStatus is one dependency of a set and where what it waits for
// stands: its outcome so far and, for a set, its tasks left (disclosed or
// requested, not yet run) of its total.
type DepStatus struct {
	sched.Dependency
	Outcome     sched.Outcome
	Left, Total int64
}

// addDependencies records that new set id waits on deps (each a set of
// the owner, or a task of one) and marks it waiting. Errors: EINVALID (a
// bad list, or the set itself), ENOTFOUND (no such set of the owner, or
// no such task).
func addDependencies(ctx context.Context, tx *Tx, owner string, id sched.SetID, deps []sched.Dependency) error {
	if len(deps) == 0 {
		return nil
	}
	if err := sched.CheckDependencies(deps); err != nil {
		return err
	}
	for _, d := range deps {
		if d.Set == id {
			return sched.Errorf(sched.EINVALID, "a set cannot wait for itself")
		}
		var ntasks int64
		err := tx.QueryRowContext(ctx, `SELECT ntasks FROM task_sets WHERE id = ? AND owner = ? AND staged = 0`, d.Set, owner).Scan(&ntasks)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "dependency: task set %d not found", d.Set)
		} else if err != nil {
			return fmt.Errorf("read dependency %d: %w", d.Set, err)
		}
		if d.Index != sched.WholeSet && int64(d.Index) >= ntasks {
			return sched.Errorf(sched.ENOTFOUND, "dependency: task %d of set %d not found (the set has %d tasks)", d.Index, d.Set, ntasks)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO set_deps (set_id, on_set, on_idx, any_outcome) VALUES (?, ?, ?, ?)`,
			id, d.Set, d.Index, boolInt(d.Any)); err != nil {
			return fmt.Errorf("record dependency: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET waiting = 1 WHERE id = ?`, id); err != nil {
		return fmt.Errorf("mark waiting: %w", err)
	}
	return nil
}

// dependencies reads what set id waits for, in (set, index) order.
func dependencies(ctx context.Context, tx *Tx, id sched.SetID) ([]sched.Dependency, error) {
	rows, err := tx.QueryContext(ctx, `SELECT on_set, on_idx, any_outcome FROM set_deps WHERE set_id = ? ORDER BY on_set, on_idx`, id)
	if err != nil {
		return nil, fmt.Errorf("read dependencies: %w", err)
	}
	defer rows.Close()
	var deps []sched.Dependency
	for rows.Next() {
		var (
			d   sched.Dependency
			any int
		)
		if err := rows.Scan(&d.Set, &d.Index, &any); err != nil {
			return nil, err
		}
		d.Any = any != 0
		deps = append(deps, d)
	}
	return deps, rows.Err()
}

// depStatus reads where what d waits for stands.
func depStatus(ctx context.Context, tx *Tx, d sched.Dependency) (DepStatus, error) {
	ds := DepStatus{Dependency: d}
	if d.Index == sched.WholeSet {
		var (
			c      sched.TaskCounts
			failed int64
		)
		if err := tx.QueryRowContext(ctx, `SELECT ntasks, n_disclosed, n_executed, n_requested, n_finished, n_canceled, n_failed FROM task_sets WHERE id = ?`, d.Set).
			Scan(&c.Total, &c.Disclosed, &c.Executed, &c.Requested, &c.Finished, &c.Canceled, &failed); err != nil {
			return ds, fmt.Errorf("read dependency set %d: %w", d.Set, err)
		}
		ds.Outcome, ds.Left, ds.Total = sched.SetOutcome(c, failed), c.Disclosed+c.Requested, c.Total
		return ds, nil
	}
	var (
		st       string
		exit     int32
		timedOut bool
	)
	if err := tx.QueryRowContext(ctx, `SELECT state, exit_code, timed_out FROM tasks WHERE set_id = ? AND idx = ?`, d.Set, d.Index).
		Scan(&st, &exit, &timedOut); err != nil {
		return ds, fmt.Errorf("read dependency task %s: %w", d.Subject(), err)
	}
	ds.Outcome, ds.Total = sched.TaskOutcome(sched.TaskState(st), exit, timedOut), 1
	if ds.Outcome == sched.OutcomePending {
		ds.Left = 1
	}
	return ds, nil
}

// GetDependencies returns what the owner's set id waits for (or waited
// for) and where each stands, and whether the set still waits. Errors:
// ENOTFOUND (no such set of the owner).
func (db *DB) GetDependencies(ctx context.Context, owner string, id sched.SetID) ([]DepStatus, bool, error) {
	var (
		out     []DepStatus
		waiting bool
	)
	err := db.read(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT waiting FROM task_sets WHERE id = ? AND owner = ? AND staged = 0`, id, owner).Scan(&waiting)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "task set %d not found", id)
		} else if err != nil {
			return fmt.Errorf("read set %d: %w", id, err)
		}
		deps, err := dependencies(ctx, tx, id)
		if err != nil {
			return err
		}
		for _, d := range deps {
			ds, err := depStatus(ctx, tx, d)
			if err != nil {
				return err
			}
			out = append(out, ds)
		}
		return nil
	})
	return out, waiting, err
}

// ResolveDependencies is the dependency pass: each waiting set that waits
// on one of the sets in changed, or is one of them, (nil: every waiting
// set) is released when
// what it waits for ended as it asked, or canceled (its unfinished tasks,
// none of which ever ran, with no ledger line; the set closed to appends,
// its reason kept) when a dependency it needs to succeed did not. A
// canceled set ends, so the sets that wait on it are resolved in the same
// pass. A waiting set whose tasks were all canceled waits no more. One
// transaction; sets that still wait are left as they are.
func (db *DB) ResolveDependencies(ctx context.Context, changed []sched.SetID) ([]DepResolution, error) {
	var out []DepResolution
	err := db.write(ctx, func(tx *Tx) error {
		out = out[:0]
		todo, err := waitingOn(ctx, tx, changed, changed == nil)
		if err != nil {
			return err
		}
		seen := map[sched.SetID]bool{}
		for len(todo) > 0 {
			id := todo[0]
			todo = todo[1:]
			if seen[id] {
				continue
			}
			seen[id] = true
			r, err := resolveOne(ctx, tx, id)
			if err != nil || r == nil {
				if err != nil {
					return err
				}
				continue
			}
			out = append(out, *r)
			if r.Verdict == sched.VerdictCancel {
				more, err := waitingOn(ctx, tx, []sched.SetID{id}, false)
				if err != nil {
					return err
				}
				todo = append(todo, more...)
			}
		}
		return nil
	})
	return out, err
}

// waitingOn returns the waiting sets that wait on a set of on or are one
// of them (every waiting set with all), by id.
func waitingOn(ctx context.Context, tx *Tx, on []sched.SetID, all bool) ([]sched.SetID, error) {
	var ids []sched.SetID
	scan := func(q string, args ...any) error {
		more, err := querySetIDs(ctx, tx, q, args...)
		if err != nil {
			return fmt.Errorf("find waiting sets: %w", err)
		}
		ids = append(ids, more...)
		return nil
	}
	if all {
		return ids, scan(`SELECT id FROM task_sets WHERE waiting = 1 AND staged = 0 ORDER BY id`)
	}
	for _, s := range on {
		if err := scan(`SELECT d.set_id FROM set_deps d WHERE d.on_set = ? AND (SELECT waiting AND NOT staged FROM task_sets WHERE id = d.set_id) = 1`, s); err != nil {
			return nil, err
		}
		if err := scan(`SELECT id FROM task_sets WHERE id = ? AND waiting = 1 AND staged = 0`, s); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// querySetIDs runs q, a query of one column of set ids, and returns them.
func querySetIDs(ctx context.Context, tx *Tx, q string, args ...any) ([]sched.SetID, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []sched.SetID
	for rows.Next() {
		var id sched.SetID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// resolveOne applies the verdict of waiting set id's dependencies; nil
// when it still waits.
func resolveOne(ctx context.Context, tx *Tx, id sched.SetID) (*DepResolution, error) {
	r := &DepResolution{Set: id}
	var open int64
	if err := tx.QueryRowContext(ctx, `SELECT owner, n_disclosed + n_requested FROM task_sets WHERE id = ?`, id).Scan(&r.Owner, &open); err != nil {
		return nil, fmt.Errorf("read waiting set %d: %w", id, err)
	}
	deps, err := dependencies(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	outcomes := make([]sched.Outcome, len(deps))
	for i, d := range deps {
		ds, err := depStatus(ctx, tx, d)
		if err != nil {
			return nil, err
		}
		outcomes[i] = ds.Outcome
	}
	r.Verdict, r.Reason = sched.Resolve(deps, outcomes)
	if open == 0 {
		// Every task canceled while it waited: nothing is left to run.
		r.Verdict, r.Reason = sched.VerdictRelease, ""
	}
	switch r.Verdict {
	case sched.VerdictWait:
		return nil, nil
	case sched.VerdictRelease:
		if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET waiting = 0 WHERE id = ?`, id); err != nil {
			return nil, fmt.Errorf("release set %d: %w", id, err)
		}
		return r, nil
	}
	now := nanos(tx.now)
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET waiting = 0, canceled_reason = ?, canceled_at = IIF(canceled_at = 0, ?, canceled_at) WHERE id = ?`,
		r.Reason, now, id); err != nil {
		return nil, fmt.Errorf("cancel set %d: %w", id, err)
	}
	rows, err := tx.QueryContext(ctx, `UPDATE tasks SET state = 'canceled', canceled_at = ? WHERE set_id = ? AND state IN ('disclosed', 'requested') RETURNING idx`, now, id)
	if err != nil {
		return nil, fmt.Errorf("cancel set %d: %w", id, err)
	}
	tx.markFreeSet(id)
	defer rows.Close()
	for rows.Next() {
		var i int32
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		r.Canceled = append(r.Canceled, i)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(r.Canceled)
	return r, nil
}

// loadWaiting reads what the waiting sets of snap wait for.
func loadWaiting(ctx context.Context, tx *Tx, snap *Snapshot) error {
	for i := range snap.Sets {
		st := &snap.Sets[i]
		if !st.Waiting {
			continue
		}
		deps, err := dependencies(ctx, tx, st.Set)
		if err != nil {
			return err
		}
		st.After = deps
	}
	return nil
}

// extendHash folds a disclose's dependencies and labels into its content
// hash (unchanged without either, so that keys stored before them still
// match).
func extendHash(hash string, deps []sched.Dependency, labels []Label) string {
	if len(deps) == 0 && len(labels) == 0 {
		return hash
	}
	var b strings.Builder
	b.WriteString(hash)
	for _, d := range deps {
		b.WriteString("\x00after=" + d.String())
	}
	for _, l := range labels {
		b.WriteString("\x00label=" + strconv.Quote(l.Key) + "=" + strconv.Quote(l.Value))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
