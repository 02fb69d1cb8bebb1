// A group commit's finish from the server's memory. The server knows each
// copy it started (Started.Known: its task, the attempt it runs for, its
// start, when its task was requested), so the batched finish
// (finishbatch.go) need not read each copy and its task before it writes
// them: it reads only each set once. Memory may be stale: the task
// canceled, retried or won by another copy since, the copy killed,
// suspended or lost. So the copies' and the tasks' UPDATEs carry what
// memory says in their WHERE, and the rows they changed are counted. If
// one did not match, the commit is rolled back and run again without
// memory (writeFinish), and the batch takes the read path (finishWinners,
// then finishCopy one by one), which answers as it did without memory:
// TestFinishKnownStaleSameAsRead checks it.

package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"batchd/sched"
)

// FinishKnown is what the server holds in memory of a copy since its
// start, for the copy's end (FinishInput.Known). The store trusts none of
// it: its writes refuse a memory gone stale.
type FinishKnown struct {
	Task    sched.TaskRef
	Attempt int32 // the task's attempt the copy runs for
	// StartedAt is the copy's started_at and RequestedAt its task's
	// requested_at (0: the task was not requested when the copy started),
	// in nanoseconds.
	StartedAt, RequestedAt int64
	// Killed: the server has since ordered the copy killed, so its end
	// cannot win: it is not of the batched kind (batchable), whatever
	// it reports, and goes one by one instead of failing the batch's
	// guarded writes as a stale memory.
	Killed bool
}

// knownStats counts the batched finishes that wrote from memory (taken)
// and those whose memory was stale (stale: rolled back, then read).
type knownStats struct{ taken, stale atomic.Int64 }

// FinishKnownStats returns how many group commits recorded their ends from
// the server's memory, and how many found it stale and read instead.
func (db *DB) FinishKnownStats() (taken, stale int64) {
	return db.known.taken.Load(), db.known.stale.Load()
}

// errStaleKnown: a write guarded by memory changed fewer rows than memory
// said it would.
var errStaleKnown = errors.New("the server's memory of a copy is stale")

// knownSet is what a batched finish reads of a set: once per set and
// commit, not per task.
type knownSet struct {
	id          sched.SetID
	owner, name string
	ruled       bool // a stop rule in force
	retries     int32
	retryOn     string
}

// finishKnown records ins (every one of the batched finish's common case,
// checked by finishWinners) from their Known, and reports whether it did;
// when it did not, it wrote nothing.
func finishKnown(ctx context.Context, tx *Tx, ins []FinishInput, out []FinishOutcome) (bool, error) {
	var sets []knownSet
	ids := []byte{'['}
	tasks := make(map[sched.TaskRef]bool, len(ins))
	for _, in := range ins {
		k := in.Known
		if k == nil || k.RequestedAt == 0 || tasks[k.Task] {
			return false, nil
		}
		tasks[k.Task] = true
		if knownSetOf(sets, k.Task.Set) < 0 {
			if len(sets) > 0 {
				ids = append(ids, ',')
			}
			ids = strconv.AppendInt(ids, int64(k.Task.Set), 10)
			sets = append(sets, knownSet{id: k.Task.Set})
		}
	}
	ids = append(ids, ']')
	found := 0
	if err := tx.rawRowsArgs(ctx, `SELECT s.id, s.owner, s.name,
		s.stopped_idx < 0 AND (s.stop_on_success != 0 OR s.stop_on_exit != '' OR s.stop_on_output != '' OR s.stop_after != 0),
		s.retries, s.retry_on FROM json_each(?) j CROSS JOIN task_sets s ON s.id = j.value`, []any{string(ids)}, func(v []driver.Value) error {
		s := &sets[knownSetOf(sets, sched.SetID(asInt(v[0])))]
		s.owner, s.name, s.ruled = asString(v[1]), asString(v[2]), asInt(v[3]) != 0
		s.retries, s.retryOn = int32(asInt(v[4])), asString(v[5])
		found++
		return nil
	}); err != nil {
		return false, fmt.Errorf("read the sets of %d copies: %w", len(ins), err)
	}
	if found != len(sets) {
		return false, nil
	}
	ends := make([]endRow, len(ins))
	for i, in := range ins {
		k := in.Known
		s := sets[knownSetOf(sets, k.Task.Set)]
		if s.ruled {
			return false, nil
		}
		// The read path's retryState.wants, but for the task's retries
		// used, which only the read knows: a set that may retry this end
		// takes the read path.
		if p, err := sched.ParseRetryOn(s.retryOn); s.retries > 0 && err == nil && p.RetriesExit(in.ExitCode, in.TimedOut) {
			return false, nil
		}
		// What the read would give for a live copy of the task's
		// attempt, never suspended, not yet reported; the guarded writes
		// check each of these.
		ends[i] = endRow{
			copy: sched.Copy{ID: in.Copy, Task: k.Task, Slot: sched.SlotRef{Worker: in.Worker}, State: sched.CopyRunning, Attempt: k.Attempt,
				StartedAt: fromNanos(k.StartedAt)},
			started: k.StartedAt, owner: s.owner, setName: s.name, taskState: sched.TaskRequested, requestedAt: k.RequestedAt, taskAttempt: k.Attempt,
		}
	}
	// A stale memory fails the whole commit (errStaleKnown), which
	// writeFinish then runs again reading.
	if err := writeWinners(ctx, tx, ins, ends, out, true); err != nil {
		return false, err
	}
	if tx.known != nil {
		tx.known.taken.Add(1)
	}
	return true, nil
}

// writeFinish runs fn, a write transaction that records the ends ins, and
// when it failed on a stale memory (errStaleKnown: nothing of it was
// committed) runs it again with ins without memory, to be read. A
// savepoint around the guarded writes would spare the second run, but
// with it open SQLite copies every page the commit then writes into its
// journal: in every commit, it cost more than the read saved.
func (db *DB) writeFinish(ctx context.Context, ins []FinishInput, fn func(tx *Tx, ins []FinishInput) error) error {
	err := db.write(ctx, func(tx *Tx) error { return fn(tx, ins) })
	if !errors.Is(err, errStaleKnown) {
		return err
	}
	db.known.stale.Add(1)
	read := slices.Clone(ins)
	for i := range read {
		read[i].Known = nil
	}
	return db.write(ctx, func(tx *Tx) error { return fn(tx, read) })
}

// knownSetOf is the index of set id in sets, -1 when none (a commit's
// ends are of a few sets).
func knownSetOf(sets []knownSet, id sched.SetID) int {
	for i := range sets {
		if sets[i].id == id {
			return i
		}
	}
	return -1
}

// The guarded writes: a copy still running for the attempt and start that
// memory says, never suspended and not yet reported, of the worker that
// reports it; a task still requested at the time memory says, at that
// attempt.
const (
	knownCopiesSQL = `UPDATE copies SET state = 'won', ended_at = ?1, cpu_seconds = v.column2, run_seconds = v.column3,
		outcome = 'won', exit_code = v.column4, signal = v.column5, timed_out = v.column6,
		out_stdout = v.column7, out_stderr = v.column8, out_flags = v.column9, out_reported = v.column10
		FROM (` + valuesMark + `) AS v WHERE copies.id = v.column1 AND copies.state = 'running' AND copies.outcome = ''
		AND copies.worker = v.column11 AND copies.set_id = v.column12 AND copies.idx = v.column13 AND copies.attempt = v.column14
		AND copies.started_at = v.column15 AND copies.suspended_seconds = 0 AND copies.suspended_at = 0`
	knownTasksSQL = `UPDATE tasks SET state = 'finished', executed_at = ?1, finished_at = ?1, win_copy = v.column3,
		exit_code = v.column4, timed_out = v.column5, service_seconds = v.column6, visible_response = MAX(0, (?1 - requested_at) / 1e9)
		FROM (` + valuesMark + `) AS v WHERE tasks.set_id = v.column1 AND tasks.idx = v.column2
		AND tasks.state = 'requested' AND tasks.attempt = v.column7 AND tasks.requested_at = v.column8`
)

// execGuarded runs tmpl as execValues does and returns errStaleKnown
// unless it changed one row for each of args' rows.
func execGuarded(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any) error {
	want := len(args) / cols
	var changed int64
	if err := valuesChunks(want, func(first, rows, size int) error {
		rs, err := tx.QueryContext(ctx, valuesSQL(tmpl, len(fixed), cols, size), chunkArgs(fixed, args[first*cols:(first+rows)*cols], (size-rows)*cols)...)
		if err != nil {
			return err
		}
		for rs.Next() {
		}
		if err := rs.Close(); err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT changes()`).Scan(&n); err != nil {
			return err
		}
		changed += n
		return nil
	}); err != nil {
		return err
	}
	if changed != int64(want) {
		return fmt.Errorf("%d rows of %d changed: %w", changed, want, errStaleKnown)
	}
	return nil
}
