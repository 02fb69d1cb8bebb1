// The batched finish's read (finishWinners) takes its rows as the driver
// gives them: database/sql's Scan converts each of a row's 26 columns by
// reflection, about a third of the read's cost at 64 copies a commit.

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"

	"batchd/sched"
)

// rawRowsArgs is rawRows for a query with positional arguments (int64,
// float64, string or []byte).
func (tx *Tx) rawRowsArgs(ctx context.Context, query string, args []any, fn func([]driver.Value) error) error {
	tx.stmts++
	c, ok := tx.q.(*sql.Conn)
	if !ok {
		return fmt.Errorf("rawRows needs a connection, not %T", tx.q)
	}
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return c.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		rows, err := qc.QueryContext(tx.ctx(ctx), query, nv)
		if err != nil {
			return err
		}
		defer rows.Close()
		v := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(v); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := fn(v); err != nil {
				return err
			}
		}
	})
}

// endFromValues is scanEnd for the driver's values v of endCols' columns.
func endFromValues(v []driver.Value) endRow {
	var r endRow
	c := &r.copy
	c.ID, c.Task.Set, c.Task.Index = sched.CopyID(asInt(v[0])), sched.SetID(asInt(v[1])), int32(asInt(v[2]))
	c.Slot.Worker, c.Slot.Slot, c.Speculative = sched.WorkerID(asString(v[3])), int32(asInt(v[4])), asInt(v[5]) != 0
	c.State, r.started = sched.CopyState(asString(v[6])), asInt(v[7])
	c.StartedAt, c.EndedAt = fromNanos(r.started), fromNanos(asInt(v[8]))
	c.Progress, c.CPUSeconds, c.RunSeconds = asFloat(v[9]), asFloat(v[10]), asFloat(v[11])
	r.outcome, r.suspended, r.suspendedAt = asString(v[12]), asFloat(v[13]), asInt(v[14])
	r.owner, r.setName, r.taskState, r.requestedAt = asString(v[15]), asString(v[16]), sched.TaskState(asString(v[17])), asInt(v[18])
	c.Attempt, r.taskAttempt = int32(asInt(v[19])), int32(asInt(v[20]))
	r.pol.used, r.pol.retries, r.pol.retryOn = int32(asInt(v[21])), int32(asInt(v[22])), asString(v[23])
	return r
}
