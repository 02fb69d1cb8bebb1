// A page of task sets read in a fixed number of statements.

package store

import (
	"context"
	"fmt"

	"batchd/sched"
)

// getSets reads the sets keys names, in that order, with their counts, as
// getSet reads each one, but in three statements for the whole page (the
// rows, then the held and the running counts of every set in it) rather
// than three per set: a list's page of 50 sets took 150 statements, and
// under many clients listing at once those were most of the server's CPU.
// A set no longer visible to its key's owner is left out.
func getSets(ctx context.Context, tx *Tx, keys []setKey) ([]sched.TaskSet, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	// +?: see "No joins per task" in store.go.
	in := plusPlaceholders(len(keys))
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k.id
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, `+setRowCols+` FROM task_sets WHERE id IN (`+in+`) AND staged = 0`, args...)
	if err != nil {
		return nil, fmt.Errorf("read sets: %w", err)
	}
	byID := make(map[sched.SetID]*sched.TaskSet, len(keys))
	for rows.Next() {
		set := new(sched.TaskSet)
		if err := scanSetRow(rows, set); err != nil {
			rows.Close()
			return nil, err
		}
		byID[set.ID] = set
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sets: %w", err)
	}
	if err := addCounts(ctx, tx, byID, heldCountsSQL(in),
		args, func(s *sched.TaskSet, n int64) { s.Counts.Held = n }); err != nil {
		return nil, fmt.Errorf("count held tasks: %w", err)
	}
	if err := addCounts(ctx, tx, byID, `SELECT set_id, COUNT(DISTINCT idx) FROM copies WHERE set_id IN (`+in+`) AND state IN ('running', 'suspended') GROUP BY set_id`,
		args, func(s *sched.TaskSet, n int64) { s.Counts.Running = n }); err != nil {
		return nil, fmt.Errorf("count running: %w", err)
	}
	out := make([]sched.TaskSet, 0, len(keys))
	for _, k := range keys {
		set, ok := byID[k.id]
		if !ok || set.Owner != k.owner {
			continue
		}
		set.State = sched.SetStateOf(set.Counts, set.Failed, set.Waiting)
		out = append(out, *set)
	}
	return out, nil
}

// addCounts runs q, which yields (set id, count) rows, and gives each set
// in byID its count with put.
func addCounts(ctx context.Context, tx *Tx, byID map[sched.SetID]*sched.TaskSet, q string, args []any, put func(*sched.TaskSet, int64)) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id sched.SetID
			n  int64
		)
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		if s, ok := byID[id]; ok {
			put(s, n)
		}
	}
	return rows.Err()
}
