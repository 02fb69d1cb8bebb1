// Recording a group commit's starts in two statements, whatever their
// number: the tasks they run are read in one query and their copies
// inserted in one statement, each over a JSON array of the decisions
// (json_each), so that the statement's text, and its plan in the
// connection's cache, is the same for 1 start or 500.

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"batchd/sched"
)

// startCopies records start decisions ds (all DecisionStart) and returns
// their copies in ds's order. Errors: ENOTFOUND (a task that does not
// exist), ECONFLICT (a copy id in use), wrapped.
func startCopies(ctx context.Context, tx *Tx, ds []sched.Decision) ([]Started, error) {
	started := make([]Started, len(ds))
	refs := make([]byte, 0, 24*len(ds))
	refs = append(refs, '[')
	for i, d := range ds {
		if i > 0 {
			refs = append(refs, ',')
		}
		refs = append(refs, '[')
		refs = strconv.AppendInt(refs, int64(d.Task.Set), 10)
		refs = append(refs, ',')
		refs = strconv.AppendInt(refs, int64(d.Task.Index), 10)
		refs = append(refs, ']')
		started[i].Decision = d
	}
	refs = append(refs, ']')
	// Scalar subqueries for the set's columns (see "No joins per task" in
	// store.go); the tasks by primary key, one per decision.
	rows, err := tx.QueryContext(ctx, `SELECT j.key, t.spec, (SELECT owner FROM task_sets WHERE id = t.set_id), t.attempt,
		(SELECT timeout_seconds FROM task_sets WHERE id = t.set_id)
		FROM json_each(?) j CROSS JOIN tasks t ON t.set_id = j.value->>0 AND t.idx = j.value->>1`, string(refs))
	if err != nil {
		return nil, fmt.Errorf("read the tasks of %d starts: %w", len(ds), err)
	}
	found := make([]bool, len(ds))
	specs := make([]string, len(ds))
	timeouts := make([]float64, len(ds))
	for rows.Next() {
		var i int
		var spec string
		var owner string
		var attempt int32
		var timeout float64
		if err := rows.Scan(&i, &spec, &owner, &attempt, &timeout); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the tasks of %d starts: %w", len(ds), err)
		}
		found[i], specs[i], timeouts[i] = true, spec, timeout
		started[i].Owner, started[i].Attempt = owner, attempt
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the tasks of %d starts: %w", len(ds), err)
	}
	type copyRow struct {
		ID          sched.CopyID   `json:"i"`
		Set         sched.SetID    `json:"s"`
		Index       int32          `json:"x"`
		Worker      sched.WorkerID `json:"w"`
		Slot        int32          `json:"l"`
		Speculative int            `json:"p"`
		Attempt     int32          `json:"a"`
	}
	cs := make([]copyRow, len(ds))
	for i, d := range ds {
		if !found[i] {
			return nil, fmt.Errorf("record decision %d on copy %d: %w", d.Kind, d.Copy, sched.Errorf(sched.ENOTFOUND, "task %d/%d not found", d.Task.Set, d.Task.Index))
		}
		cs[i] = copyRow{ID: d.Copy, Set: d.Task.Set, Index: d.Task.Index, Worker: d.Slot.Worker, Slot: d.Slot.Slot, Speculative: boolInt(d.Speculative), Attempt: started[i].Attempt}
	}
	buf, err := json.Marshal(cs)
	if err != nil {
		return nil, fmt.Errorf("encode %d starts: %w", len(ds), err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO copies (id, set_id, idx, worker, slot, speculative, state, started_at, attempt)
		SELECT j.value->>'i', j.value->>'s', j.value->>'x', j.value->>'w', j.value->>'l', j.value->>'p', 'running', ?, j.value->>'a'
		FROM json_each(?) j ORDER BY j.key`, nanos(tx.now), string(buf)); err != nil {
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
