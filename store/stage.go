// A staged disclose: a new set of many tasks written in chunks, one write
// transaction each, and made visible at once. Other writes (a worker's
// report, a heartbeat, a decision) pass queued chunks (writegate.go), so
// none waits behind more than two chunks; until the last step the set is
// staged (task_sets.staged, migration 0024), seen by no lookup, with
// counts of 0, and a crash leaves nothing visible behind it
// (DropStagedLeftovers).

package store

import (
	"context"
	"database/sql"
	"fmt"

	"batchd/sched"
)

// DefaultStageRows is how many task rows one chunk of a staged disclose
// inserts: a task row takes about 7 µs (BenchmarkBigSet), so a chunk
// holds the writer for about 35 ms on a quiet machine.
const DefaultStageRows = 5_000

// Staged is a disclose under way in chunks: BeginStaged, StageTasks,
// CommitStaged (or DropStaged).
type Staged struct {
	in   DiscloseInput
	n    int
	hash string
	rows taskRows
}

// Set is the id of the staged set.
func (st *Staged) Set() sched.SetID { return st.rows.set }

// stageRows is the rows per chunk (StageRows, or DefaultStageRows).
func (db *DB) stageRows() int {
	if db.StageRows > 0 {
		return db.StageRows
	}
	return DefaultStageRows
}

// Chunked reports whether in is disclosed in chunks: a new set of more
// tasks than one chunk holds. An append goes in one transaction (the
// tasks of a visible set cannot be hidden), whatever its size.
func (db *DB) Chunked(in DiscloseInput) bool {
	if in.SetID != 0 {
		return false
	}
	n := len(in.Tasks)
	if in.Array != nil {
		n = int(in.Array.Count)
	}
	return n > db.stageRows()
}

// BeginStaged checks in as Disclose does and creates its set, staged. A
// call whose idempotency key was used before with the same content is
// answered from the first call (res.Replayed) and st is nil. Errors as
// Disclose's.
func (db *DB) BeginStaged(ctx context.Context, in DiscloseInput) (st *Staged, res DiscloseResult, err error) {
	if in.SetID != 0 {
		return nil, res, sched.Errorf(sched.EINVALID, "an append is not staged")
	}
	n, err := in.check()
	if err != nil {
		return nil, res, err
	}
	if int64(n) > MaxTasksPerSet {
		return nil, res, sched.Errorf(sched.ERESOURCEEXHAUSTED, "a task set would hold %d tasks; the limit is %d per set", n, MaxTasksPerSet)
	}
	hash := in.keyHash()
	err = db.write(ctx, func(tx *Tx) error {
		if replayed, err := replay(ctx, tx, in, hash, &res); replayed || err != nil {
			return err
		}
		id, err := createSet(ctx, tx, in, true)
		if err != nil {
			return err
		}
		ref := ""
		if in.Array != nil {
			if ref, err = insertArray(ctx, tx, id, 0, *in.Array); err != nil {
				return err
			}
		}
		st = &Staged{in: in, n: n, hash: hash, rows: taskRows{set: id, ref: ref, now: nanos(tx.now)}}
		st.rows.state, st.rows.reqAt = in.taskState(tx.now)
		return nil
	})
	if err != nil || res.Replayed {
		return nil, res, err
	}
	return st, res, nil
}

// StageTasks inserts st's tasks, one chunk of StageRows per write
// transaction. Before each chunk it calls StageChunkFunc (when set) with
// the chunk's number, outside the writer. On an error the set stays
// staged: DropStaged removes it.
func (db *DB) StageTasks(ctx context.Context, st *Staged) error {
	per := db.stageRows()
	for chunk, from := 0, 0; from < st.n; chunk, from = chunk+1, from+per {
		if f := db.StageChunkFunc; f != nil {
			f(st.rows.set, chunk)
		}
		to := min(from+per, st.n)
		if err := db.writeChunk(ctx, func(tx *Tx) error {
			if f := db.StageChunkHeldFunc; f != nil {
				f(st.rows.set, chunk)
			}
			return st.rows.insert(ctx, tx, st.in, from, to)
		}); err != nil {
			return fmt.Errorf("stage tasks %d to %d of set %d: %w", from, to, st.rows.set, err)
		}
	}
	return nil
}

// CommitStaged makes st's set visible with its counts, its cap and its
// idempotency key, in one transaction. When another call with the same
// key committed first, the answer is that call's (res.Replayed) and st's
// set is left staged: DropStaged removes it. Errors: ECONFLICT (the key
// was used with other content since).
func (db *DB) CommitStaged(ctx context.Context, st *Staged) (res DiscloseResult, err error) {
	err = db.write(ctx, func(tx *Tx) error {
		if replayed, err := replay(ctx, tx, st.in, st.hash, &res); replayed || err != nil {
			return err
		}
		res.Created = true
		if err := closeDisclose(ctx, tx, st.in, st.rows.set, 0, st.n, st.hash, &res); err != nil {
			return err
		}
		if st.in.Request {
			res.RequestedAt = fromNanos(st.rows.reqAt) // the tasks' stamp, from the staging's start
		}
		return nil
	})
	if err == nil {
		st.in.Tasks = nil // the specs are stored
	}
	return res, err
}

// DropStaged removes a staged set and everything stored with it, a chunk
// of tasks per transaction; a visible set is left alone.
func (db *DB) DropStaged(ctx context.Context, id sched.SetID) error {
	var last int64
	staged := true
	err := db.read(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT IFNULL((SELECT MAX(idx) FROM tasks WHERE set_id = ?), -1) FROM task_sets WHERE id = ? AND staged = 1`, id, id).Scan(&last)
		if err == sql.ErrNoRows {
			staged = false // visible, or gone
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("drop staged set %d: %w", id, err)
	}
	if !staged {
		return nil
	}
	per := int64(db.stageRows())
	for from := int64(0); from <= last; from += per {
		if err := db.write(ctx, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE set_id = ? AND idx >= ? AND idx < ?
				AND (SELECT staged FROM task_sets WHERE id = ?) = 1`, id, from, from+per, id)
			return err
		}); err != nil {
			return fmt.Errorf("drop staged set %d: %w", id, err)
		}
	}
	return db.write(ctx, func(tx *Tx) error {
		var staged int
		if err := tx.QueryRowContext(ctx, `SELECT staged FROM task_sets WHERE id = ?`, id).Scan(&staged); err != nil || staged != 1 {
			return err
		}
		for _, q := range []string{
			`DELETE FROM tasks WHERE set_id = ?`, // none left but a straggler
			`DELETE FROM task_arrays WHERE set_id = ?`,
			`DELETE FROM set_deps WHERE set_id = ?`,
			`DELETE FROM set_labels WHERE set_id = ?`,
			`DELETE FROM set_name_grams WHERE set_id = ?`,
			`DELETE FROM request_heard WHERE set_id = ?`,
			`DELETE FROM task_sets WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("drop staged set %d: %w", id, err)
			}
		}
		return nil
	})
}

// DropStagedLeftovers removes the sets a server left staged when it
// stopped in the middle of a disclose. Only a server, at its start,
// calls it: a tool that opens the database beside a running server must
// not drop the disclose under way there.
func (db *DB) DropStagedLeftovers(ctx context.Context) (int, error) {
	var ids []sched.SetID
	err := db.read(ctx, func(tx *Tx) (err error) {
		ids, err = querySetIDs(ctx, tx, `SELECT id FROM task_sets WHERE staged = 1 ORDER BY id`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("find staged sets: %w", err)
	}
	for _, id := range ids {
		if err := db.DropStaged(ctx, id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
