// Disclose: a task set and its tasks written in one transaction, with the
// idempotency key, the caps and the array rows.

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"batchd/sched"
)

// DiscloseInput is one Disclose call.
type DiscloseInput struct {
	Owner string
	SetID sched.SetID // 0 creates a set
	Name  string
	Tasks []sched.TaskSpec
	// Array is a task array to disclose instead of Tasks (nil: none).
	Array          *TaskArray
	IdempotencyKey string // "" = none
	Request        bool   // request the new tasks at once
	// MaxRunning caps the set's running copies (0: none; on an append,
	// leave the cap as it is).
	MaxRunning int32
	// Retry is the set's retry policy (on an append, Retries 0 leaves the
	// policy as it is).
	Retry sched.RetryPolicy
	// Stop is the set's stop rule (zero: none; on an append, a zero rule
	// leaves the rule as it is, another replaces it).
	Stop sched.StopRule
	// After makes a new set wait for these sets or tasks (depend.go); a
	// new set only.
	After []sched.Dependency
	// Labels are a new set's labels (labels.go); a new set only.
	Labels []Label
	// Route is where a new set's copies may run (route.go; zero:
	// anywhere); ignored on an append.
	Route sched.Route
	// RequestHash is the content hash recorded with IdempotencyKey ("":
	// Hash computes it from the fields above; a streamed disclose passes
	// the hash of the whole stream, see DiscloseHasher).
	RequestHash string
}

// DiscloseResult is what a Disclose did.
type DiscloseResult struct {
	Set         sched.TaskSet
	FirstIndex  int32
	Count       int32
	Replayed    bool // an earlier call with the same key made this answer
	Created     bool // the set is new
	DisclosedAt time.Time
	// RequestedAt is the stamp a requesting call's tasks carry as their
	// requested_at (zero: the call requested nothing): DisclosedAt, or for
	// a staged set the time its staging began.
	RequestedAt time.Time
}

// ChangesSet reports whether in, an append to a set, changes its cap or
// its retry policy: then it needs no tasks.
func (in DiscloseInput) ChangesSet() bool {
	return in.SetID != 0 && (in.MaxRunning > 0 || in.Retry.Retries > 0 || !in.Stop.IsZero())
}

// Disclose creates a set or appends tasks to one, records the idempotency
// key in the same transaction, and with in.Request requests the new tasks.
// An append of no tasks that sets a cap or a retry policy (ChangesSet)
// changes the set only. A replayed key (same content hash, see
// DiscloseHasher) returns the first call's answer and writes nothing.
// Errors: EINVALID (no tasks), ECONFLICT
// (the key was used with other content), ENOTFOUND (no such set of the owner),
// EFAILEDPRECONDITION (the set was canceled as a whole, or every task of
// it is canceled),
// ERESOURCEEXHAUSTED (the set would exceed MaxTasksPerSet).
func (db *DB) Disclose(ctx context.Context, in DiscloseInput) (DiscloseResult, error) {
	var res DiscloseResult
	n, err := in.check()
	if err != nil {
		return res, err
	}
	hash := in.keyHash() // outside the write lock: 200,000 specs take a while
	err = db.write(ctx, func(tx *Tx) error {
		if replayed, err := replay(ctx, tx, in, hash, &res); replayed || err != nil {
			return err
		}
		setID := in.SetID
		var ntasks int64
		if setID == 0 {
			id, err := createSet(ctx, tx, in, false)
			if err != nil {
				return err
			}
			setID, res.Created = id, true
		} else {
			var err error
			if ntasks, err = appendableSet(ctx, tx, in); err != nil {
				return err
			}
		}
		if ntasks+int64(n) > MaxTasksPerSet {
			return sched.Errorf(sched.ERESOURCEEXHAUSTED, "task set %d would hold %d tasks; the limit is %d per set", setID, ntasks+int64(n), MaxTasksPerSet)
		}
		ref := ""
		if in.Array != nil {
			var err error
			if ref, err = insertArray(ctx, tx, setID, ntasks, *in.Array); err != nil {
				return err
			}
		}
		rows := taskRows{set: setID, base: ntasks, ref: ref, now: nanos(tx.now)}
		rows.state, rows.reqAt = in.taskState(tx.now)
		if err := rows.insert(ctx, tx, in, 0, n); err != nil {
			return err
		}
		return closeDisclose(ctx, tx, in, setID, ntasks, n, hash, &res)
	})
	return res, err
}

// check validates in and returns the number of tasks it discloses.
func (in DiscloseInput) check() (int, error) {
	if len(in.Tasks) == 0 && in.Array == nil && !in.ChangesSet() {
		return 0, sched.Errorf(sched.EINVALID, "no tasks to disclose: give at least one task")
	}
	if len(in.Tasks) > 0 && in.Array != nil {
		return 0, sched.Errorf(sched.EINVALID, "give tasks or an array, not both")
	}
	n := len(in.Tasks)
	if in.Array != nil {
		if in.Array.Count <= 0 || in.Array.Step <= 0 {
			return 0, sched.Errorf(sched.EINVALID, "array of %d tasks by step %d: want at least one task and a positive step", in.Array.Count, in.Array.Step)
		}
		n = int(in.Array.Count)
	}
	if in.MaxRunning < 0 {
		return 0, sched.Errorf(sched.EINVALID, "max running %d is negative (0 means no cap)", in.MaxRunning)
	}
	if err := errors.Join(in.Retry.Validate(), in.Stop.Validate()); err != nil {
		return 0, err
	}
	if in.SetID != 0 && (len(in.After) > 0 || len(in.Labels) > 0) {
		return 0, sched.Errorf(sched.EINVALID, "dependencies and labels are given when a set is created, not on an append")
	}
	if err := CheckLabels(in.Labels); err != nil {
		return 0, err
	}
	return n, nil
}

// keyHash is the content hash recorded with in's idempotency key ("":
// no key).
func (in DiscloseInput) keyHash() string {
	if in.IdempotencyKey == "" {
		return ""
	}
	return routeHash(extendHash(in.Hash(), in.After, in.Labels), in.Route)
}

// taskState is the state and request time of in's new tasks.
func (in DiscloseInput) taskState(now time.Time) (sched.TaskState, int64) {
	if in.Request {
		return sched.TaskRequested, nanos(now)
	}
	return sched.TaskDisclosed, 0
}

// replay fills res with the answer of an earlier call with in's
// idempotency key and reports whether there was one.
func replay(ctx context.Context, tx *Tx, in DiscloseInput, hash string, res *DiscloseResult) (bool, error) {
	if in.IdempotencyKey == "" {
		return false, nil
	}
	known, a, err := idempotencyKey(ctx, tx, in.Owner, in.IdempotencyKey, hash)
	if err != nil || !known {
		return false, err
	}
	res.Replayed, res.FirstIndex, res.Count = true, a.first, a.count
	res.Set, err = getSet(ctx, tx, in.Owner, a.set)
	return true, err
}

// createSet inserts in's new set with its stop rule, dependencies,
// labels and name pieces; staged, it stays hidden until commitStaged.
func createSet(ctx context.Context, tx *Tx, in DiscloseInput, staged bool) (sched.SetID, error) {
	// Never before the newest set's creation (a clock that stepped
	// back): ids then follow creation times, which ListSets's time
	// range relies on.
	r, err := tx.ExecContext(ctx, `INSERT INTO task_sets (owner, name, created_at, max_running, retries, retry_on, staged)
		VALUES (?, ?, MAX(?, COALESCE((SELECT created_at FROM task_sets ORDER BY id DESC LIMIT 1), 0)), ?, ?, ?, ?)`,
		in.Owner, in.Name, nanos(tx.now), in.MaxRunning, in.Retry.Retries, in.Retry.RetryOn(), boolInt(staged))
	if err != nil {
		return 0, fmt.Errorf("create set: %w", err)
	}
	id, _ := r.LastInsertId()
	setID := sched.SetID(id)
	if !in.Stop.IsZero() {
		if err := setStopRule(ctx, tx, setID, in.Stop); err != nil {
			return 0, err
		}
	}
	if err := addDependencies(ctx, tx, in.Owner, setID, in.After); err != nil {
		return 0, err
	}
	if err := addLabels(ctx, tx, setID, in.Labels); err != nil {
		return 0, err
	}
	if err := setSetRoute(ctx, tx, setID, in.Route); err != nil {
		return 0, err
	}
	if err := addNameGrams(ctx, tx, setID); err != nil {
		return 0, err
	}
	return setID, nil
}

// appendableSet checks that in's set takes more tasks, sets its stop rule
// when in has one, and returns how many tasks it holds.
func appendableSet(ctx context.Context, tx *Tx, in DiscloseInput) (int64, error) {
	var ntasks, canceledAt, canceled int64
	setID := in.SetID
	if err := tx.QueryRowContext(ctx, `SELECT ntasks, canceled_at, n_canceled FROM task_sets WHERE id = ? AND owner = ? AND staged = 0`, setID, in.Owner).
		Scan(&ntasks, &canceledAt, &canceled); err == sql.ErrNoRows {
		return 0, sched.Errorf(sched.ENOTFOUND, "task set %d not found", setID)
	} else if err != nil {
		return 0, fmt.Errorf("read set: %w", err)
	}
	if canceledAt != 0 {
		return 0, sched.Errorf(sched.EFAILEDPRECONDITION, "task set %d was canceled at %s (its unrequested tasks were dropped): disclose a new set instead",
			setID, fromNanos(canceledAt).Format(time.DateTime+" MST"))
	}
	if ntasks > 0 && canceled == ntasks {
		return 0, sched.Errorf(sched.EFAILEDPRECONDITION, "task set %d is canceled (all its %d tasks are): disclose a new set instead", setID, ntasks)
	}
	if !in.Stop.IsZero() {
		if err := setStopRule(ctx, tx, setID, in.Stop); err != nil {
			return 0, err
		}
	}
	return ntasks, nil
}

// taskRows is where a disclose's task rows go: the set, the index of its
// first new task, the array they refer to ("": none), their state and
// times.
type taskRows struct {
	set        sched.SetID
	base       int64
	ref        string
	state      sched.TaskState
	now, reqAt int64
}

// insert inserts the rows of in's tasks [from, to).
func (r taskRows) insert(ctx context.Context, tx *Tx, in DiscloseInput, from, to int) error {
	// A few rows run through the connection's statement cache: an
	// explicit Prepare bypasses it and compiled this insert (its
	// triggers and foreign keys) again at every disclose, about 80 µs,
	// more than the rest of a one-task disclose (BenchmarkDiscloseOne).
	// Many rows run on a statement prepared for them, which costs less
	// per row than the cache's lookup: BenchmarkBigSet's 100,000-task
	// disclose took 0.72 / 0.74 s through the cache, 0.66 / 0.62 s so.
	var stmt rowExecer = cachedStmt{tx: tx, query: insertTaskSQL}
	if to-from > preparedRows {
		ps, err := tx.PrepareContext(ctx, insertTaskSQL)
		if err != nil {
			return fmt.Errorf("prepare insert: %w", err)
		}
		defer ps.Close()
		stmt = ps
	}
	rctx := rowCtx(ctx)
	state := string(r.state)
	if a := in.Array; a != nil {
		// Per task a row that refers to the array's row.
		spec := a.Spec
		for i := from; i < to; i++ {
			if err := canceled(ctx, i); err != nil {
				return err
			}
			if _, err := stmt.ExecContext(rctx, r.set, r.base+int64(i), r.ref, spec.EstimateSeconds,
				boolInt(spec.NoSpeculation), spec.DeadlineSeconds, state, r.now, r.reqAt, spec.Cpus, spec.MemoryMB, spec.GPUs); err != nil {
				return fmt.Errorf("insert task: %w", err)
			}
		}
		return nil
	}
	for i := from; i < to; i++ {
		if err := canceled(ctx, i); err != nil {
			return err
		}
		spec := &in.Tasks[i]
		buf, err := json.Marshal(spec)
		if err != nil {
			return fmt.Errorf("encode spec: %w", err)
		}
		if _, err := stmt.ExecContext(rctx, r.set, r.base+int64(i), string(buf), spec.EstimateSeconds,
			boolInt(spec.NoSpeculation), spec.DeadlineSeconds, state, r.now, r.reqAt, spec.Cpus, spec.MemoryMB, spec.GPUs); err != nil {
			return fmt.Errorf("insert task: %w", err)
		}
	}
	return nil
}

// closeDisclose counts the n new tasks on the set (which held ntasks),
// applies in's cap and retry policy, makes a staged set visible, records
// the idempotency key and reads the set into res.
func closeDisclose(ctx context.Context, tx *Tx, in DiscloseInput, setID sched.SetID, ntasks int64, n int, hash string, res *DiscloseResult) error {
	// The set's counts by state take the new tasks here, once (the
	// per-row trigger went in migration 0015).
	nDisc, nReq := n, 0
	if in.Request {
		nDisc, nReq = 0, n
	}
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET ntasks = ntasks + ?, n_disclosed = n_disclosed + ?, n_requested = n_requested + ?,
		max_running = IIF(? > 0, ?, max_running), retries = IIF(? > 0, ?, retries), retry_on = IIF(? > 0, ?, retry_on), staged = 0 WHERE id = ?`,
		n, nDisc, nReq, in.MaxRunning, in.MaxRunning, in.Retry.Retries, in.Retry.Retries, in.Retry.Retries, in.Retry.RetryOn(), setID); err != nil {
		return fmt.Errorf("count tasks: %w", err)
	}
	res.FirstIndex, res.Count = int32(ntasks), int32(n)
	if in.IdempotencyKey != "" {
		if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (owner, key, set_id, first_index, count, created_at, request_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			in.Owner, in.IdempotencyKey, setID, res.FirstIndex, res.Count, nanos(tx.now), hash); err != nil {
			return fmt.Errorf("record idempotency key: %w", err)
		}
	}
	res.DisclosedAt = tx.now
	if in.Request {
		res.RequestedAt = tx.now
	}
	var err error
	res.Set, err = getSet(ctx, tx, in.Owner, setID)
	return err
}

// insertTaskSQL inserts one task row (Disclose).
const insertTaskSQL = `INSERT INTO tasks (set_id, idx, spec, estimate, no_speculation, deadline, state, disclosed_at, requested_at, cpus, memory_mb, gpus)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// preparedRows is the most task rows a disclose inserts through the
// statement cache; more get a statement of their own.
const preparedRows = 64

// rowExecer runs one statement with its arguments: a *sql.Stmt or a
// cachedStmt.
type rowExecer interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

// cachedStmt runs one statement of a transaction again and again through
// the connection's statement cache (prepared once per connection, not
// once per call as tx.PrepareContext does).
type cachedStmt struct {
	tx    *Tx
	query string
}

func (c cachedStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return c.tx.ExecContext(ctx, c.query, args...)
}
