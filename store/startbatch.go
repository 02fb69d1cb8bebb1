// Recording a group commit's starts in two statements (a few past 256
// starts: see valuesrows.go): the tasks they run are read in one query and
// their copies inserted in one statement, the decisions' values bound in
// a VALUES list.

package store

import (
	"context"
	"database/sql/driver"
	"fmt"

	"batchd/sched"
)

// startCopies records start decisions ds (all DecisionStart) and returns
// their copies in ds's order. Errors: ENOTFOUND (a task that does not
// exist), ECONFLICT (a copy id in use), wrapped.
func startCopies(ctx context.Context, tx *Tx, ds []sched.Decision) ([]Started, error) {
	started := make([]Started, len(ds))
	refs := make([]any, 0, 3*len(ds))
	for i, d := range ds {
		refs = append(refs, int64(i), int64(d.Task.Set), int64(d.Task.Index))
		started[i].Decision = d
	}
	found := make([]bool, len(ds))
	specs := make([]string, len(ds))
	timeouts := make([]float64, len(ds))
	// Scalar subqueries for the set's columns (see "No joins per task" in
	// store.go); the tasks by primary key, one per decision.
	// The task's requested_at is for the copy's end (Started.Known).
	now := nanos(tx.now)
	if err := queryValuesRaw(ctx, tx, `SELECT v.column1, t.spec, (SELECT owner FROM task_sets WHERE id = t.set_id), t.attempt,
		(SELECT timeout_seconds FROM task_sets WHERE id = t.set_id), t.requested_at
		FROM (`+valuesMark+`) AS v CROSS JOIN tasks t ON t.set_id = v.column2 AND t.idx = v.column3`, nil, 3, refs,
		func(v []driver.Value) error {
			i := asInt(v[0])
			found[i], specs[i], timeouts[i] = true, asString(v[1]), asFloat(v[4])
			st := &started[i]
			st.Owner, st.Attempt = asString(v[2]), int32(asInt(v[3]))
			st.Known = FinishKnown{Task: st.Decision.Task, Attempt: st.Attempt, StartedAt: now, RequestedAt: asInt(v[5])}
			return nil
		}); err != nil {
		return nil, fmt.Errorf("read the tasks of %d starts: %w", len(ds), err)
	}
	cs := make([]any, 0, 7*len(ds))
	for i, d := range ds {
		if !found[i] {
			return nil, fmt.Errorf("record decision %d on copy %d: %w", d.Kind, d.Copy, sched.Errorf(sched.ENOTFOUND, "task %d/%d not found", d.Task.Set, d.Task.Index))
		}
		cs = append(cs, int64(d.Copy), int64(d.Task.Set), int64(d.Task.Index), string(d.Slot.Worker), int64(d.Slot.Slot),
			int64(boolInt(d.Speculative)), int64(started[i].Attempt))
	}
	if err := execValues(ctx, tx, `INSERT INTO copies (id, set_id, idx, worker, slot, speculative, attempt, state, started_at)
		SELECT v.*, 'running', ?1 FROM (`+valuesMark+`) AS v WHERE v.column1 IS NOT NULL`, []any{now}, 7, cs); err != nil {
		return nil, fmt.Errorf("record %d starts: %w", len(ds), translate(err))
	}
	for i := range started {
		st := &started[i]
		if err := taskSpec(ctx, tx, specs[i], st.Decision.Task.Index, &st.Spec); err != nil {
			return nil, fmt.Errorf("record decision %d on copy %d: %w", st.Decision.Kind, st.Decision.Copy, err)
		}
		if timeouts[i] > 0 {
			// The set's timeout, changed in place, replaces the task's own.
			st.Spec.TimeoutSeconds = timeouts[i]
		}
	}
	return started, nil
}
