// Reads of task sets, tasks, copies and outputs, each confined to its owner.

package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"batchd/sched"
)

// GetTaskSet returns a set of the owner with its counts. Errors: ENOTFOUND.
func (db *DB) GetTaskSet(ctx context.Context, owner string, id sched.SetID) (sched.TaskSet, error) {
	var set sched.TaskSet
	err := db.read(ctx, func(tx *Tx) (err error) {
		set, err = getSet(ctx, tx, owner, id)
		return err
	})
	return set, err
}

// TaskPage selects a page of a set's tasks.
type TaskPage struct {
	PageSize  int32
	PageToken string // index after which the page starts
	States    []sched.TaskState
}

// ListTasks returns a page of a set's tasks, each with its copies, and the
// token of the next page ("" at the end). Errors: ENOTFOUND, EINVALID (bad
// page token).
func (db *DB) ListTasks(ctx context.Context, owner string, id sched.SetID, p TaskPage) (sched.TaskSet, []sched.Task, string, error) {
	var (
		set   sched.TaskSet
		tasks []sched.Task
		next  string
	)
	size := clampPage(p.PageSize, DefaultTaskPage, MaxTaskPage)
	after := int64(-1)
	if p.PageToken != "" {
		n, err := strconv.ParseInt(p.PageToken, 10, 32)
		if err != nil || n < 0 {
			return set, nil, "", sched.Errorf(sched.EINVALID, "bad page token %q", p.PageToken)
		}
		after = n
	}
	err := db.read(ctx, func(tx *Tx) (err error) {
		if set, err = getSet(ctx, tx, owner, id); err != nil {
			return err
		}
		one := []sched.TaskSet{set}
		if err := pageExtras(ctx, tx, one); err != nil {
			return err
		}
		set = one[0]
		// +?: a parameter the planner cannot look at (see "No joins per
		// task" in store.go).
		q := `SELECT ` + taskCols + ` FROM tasks WHERE set_id = +? AND idx > +?`
		args := []any{id, after}
		if len(p.States) > 0 {
			q += ` AND state IN (` + plusPlaceholders(len(p.States)) + `)`
			for _, s := range p.States {
				args = append(args, string(s))
			}
		}
		q += ` ORDER BY idx LIMIT +?`
		args = append(args, size+1)
		// The set's size bounds the page: a snapshot of a set smaller
		// than the page is read into one slice of its size.
		if tasks, err = queryTasks(ctx, tx, min(size+1, int(set.Counts.Total)), q, args...); err != nil {
			return err
		}
		if len(tasks) > size {
			tasks = tasks[:size]
			next = strconv.Itoa(int(tasks[size-1].Index))
		}
		return attachCopies(ctx, tx, id, tasks)
	})
	return set, tasks, next, err
}

// GetTasks returns the named tasks of a set with their copies (indexes out
// of range are skipped). Errors: ENOTFOUND (no such set).
func (db *DB) GetTasks(ctx context.Context, owner string, id sched.SetID, indexes []int32) (sched.TaskSet, []sched.Task, error) {
	var (
		set   sched.TaskSet
		tasks []sched.Task
	)
	err := db.read(ctx, func(tx *Tx) (err error) {
		if set, err = getSet(ctx, tx, owner, id); err != nil {
			return err
		}
		tasks, err = getTasks(ctx, tx, id, indexes)
		return err
	})
	return set, tasks, err
}

func getTasks(ctx context.Context, tx *Tx, id sched.SetID, indexes []int32) ([]sched.Task, error) {
	var tasks []sched.Task
	for start := 0; start < len(indexes); start += 500 {
		chunk := indexes[start:min(len(indexes), start+500)]
		args := []any{id}
		for _, i := range chunk {
			args = append(args, i)
		}
		ts, err := queryTasks(ctx, tx, len(chunk), `SELECT `+taskCols+` FROM tasks WHERE set_id = ? AND idx IN (`+placeholders(len(chunk))+`) ORDER BY idx`, args...)
		if err != nil {
			return nil, err
		}
		if err := attachCopies(ctx, tx, id, ts); err != nil {
			return nil, err
		}
		if tasks == nil { // one chunk: most watches' changes
			tasks = ts
		} else {
			tasks = append(tasks, ts...)
		}
	}
	return tasks, nil
}

// AllOwners, passed as the owner to ListTaskSets and GetBill, selects every
// owner's sets or lines (for admins).
const AllOwners = "*"

// ListTaskSets returns a page of the owner's sets (every owner's with
// AllOwners), newest first, and the next page's token: ListSets without
// filters. Errors: EINVALID (bad page token).
func (db *DB) ListTaskSets(ctx context.Context, owner string, pageSize int32, token string) ([]sched.TaskSet, string, error) {
	return db.ListSets(ctx, SetFilter{Owner: owner, PageSize: pageSize, PageToken: token})
}

func clampPage(n int32, def, most int) int {
	switch {
	case n <= 0:
		return def
	case int(n) > most:
		return most
	}
	return int(n)
}

// getSet reads a set of the owner with its counts; ENOTFOUND otherwise (a
// set of another owner is not found, so that nobody learns it exists).
func getSet(ctx context.Context, tx *Tx, owner string, id sched.SetID) (sched.TaskSet, error) {
	var set sched.TaskSet
	// The counts, the billed sum and the response sum are kept on the set's
	// row by triggers (migration 0006): one row read, whatever the set's size.
	err := scanSetRow(tx.QueryRowContext(ctx, `SELECT id, `+setRowCols+` FROM task_sets WHERE id = ? AND owner = ? AND staged = 0`, id, owner), &set)
	if err == sql.ErrNoRows {
		return sched.TaskSet{ID: id}, sched.Errorf(sched.ENOTFOUND, "task set %d not found", id)
	} else if err != nil {
		return sched.TaskSet{ID: id}, err
	}
	if set.Counts.Held, err = countHeld(ctx, tx, id); err != nil {
		return set, err
	}
	// +?: see "No joins per task" in store.go.
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(DISTINCT idx) FROM copies WHERE set_id = +? AND state IN ('running', 'suspended')`, id).
		Scan(&set.Counts.Running); err != nil {
		return set, fmt.Errorf("count running: %w", err)
	}
	set.State = sched.SetStateOf(set.Counts, set.Failed, set.Waiting)
	return set, readSetRoute(ctx, tx, &set)
}

// setRowCols are the columns of task_sets that scanSetRow reads, after
// the set's id.
const setRowCols = `owner, name, created_at, ntasks, n_disclosed, n_executed, n_requested, n_finished, n_canceled,
	billed_slot_seconds, sum_visible_response, max_running, retries, retry_on, ` + stopCols + `, timeout_seconds, waiting, canceled_reason, n_failed`

// rowScanner is a row to scan: *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanSetRow reads a set's row (id, then setRowCols) into set: everything
// but the counts of held and running tasks and the state, which depend on
// them. It returns sql.ErrNoRows as such.
func scanSetRow(row rowScanner, set *sched.TaskSet) error {
	var (
		created     int64
		sumResponse float64
		retries     int32
		retryOn     string
		stop        stopRow
	)
	err := row.Scan(&set.ID, &set.Owner, &set.Name, &created, &set.Counts.Total, &set.Counts.Disclosed, &set.Counts.Executed, &set.Counts.Requested,
		&set.Counts.Finished, &set.Counts.Canceled, &set.BilledSlotSeconds, &sumResponse, &set.MaxRunning, &retries, &retryOn,
		&stop.onSuccess, &stop.onExit, &stop.onOutput, &stop.after, &stop.stoppedAt, &stop.stoppedIdx, &stop.stoppedAttempt, &stop.why, &stop.canceled,
		&set.TimeoutSeconds, &set.Waiting, &set.CanceledReason, &set.Failed)
	if err == sql.ErrNoRows {
		return err
	} else if err != nil {
		return fmt.Errorf("read set %d: %w", set.ID, err)
	}
	set.CreatedAt = fromNanos(created)
	if set.Retry, err = sched.ParseRetryOn(retryOn); err != nil {
		return fmt.Errorf("read set %d: retry policy %q: %w", set.ID, retryOn, err)
	}
	set.Retry.Retries = retries
	if set.Stop, set.Stopped, err = stop.decode(set.ID); err != nil {
		return err
	}
	if set.Counts.Finished > 0 {
		set.MeanVisibleResponseSeconds = sumResponse / float64(set.Counts.Finished)
	}
	return nil
}

const taskCols = `set_id, idx, spec, state, disclosed_at, requested_at, executed_at, finished_at, canceled_at,
	visible_response, service_seconds, exit_code, timed_out, attempt, held, fail_reason`

// queryTasks reads the tasks q selects (taskCols), most of them at most
// (a hint, up to a page of MaxTaskPage: more are read too).
func queryTasks(ctx context.Context, tx *Tx, most int, q string, args ...any) ([]sched.Task, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	defer rows.Close()
	var (
		out   = make([]sched.Task, 0, max(0, min(most, MaxTaskPage+1))) // sized once, not grown by doubling
		later specLater
	)
	var (
		spec, state                               string
		disclosed, requested, executed, fin, canc int64
		timedOut, held                            int
	)
	for rows.Next() {
		// Scanned in place: a Task of its own would escape to the heap
		// (Scan takes its fields' addresses), one more allocation and
		// copy per task read.
		out = append(out, sched.Task{})
		t := &out[len(out)-1]
		if err := rows.Scan(&t.Set, &t.Index, &spec, &state, &disclosed, &requested, &executed, &fin, &canc,
			&t.VisibleResponseSeconds, &t.ServiceSeconds, &t.ExitCode, &timedOut, &t.Attempt, &held, &t.FailReason); err != nil {
			return nil, err
		}
		if err := later.decode(spec, t.Index, len(out)-1, &t.Spec); err != nil {
			return nil, fmt.Errorf("decode spec of task %d/%d: %w", t.Set, t.Index, err)
		}
		t.State = sched.TaskState(state)
		t.DisclosedAt, t.RequestedAt, t.ExecutedAt = fromNanos(disclosed), fromNanos(requested), fromNanos(executed)
		t.FinishedAt, t.CanceledAt = fromNanos(fin), fromNanos(canc)
		t.TimedOut = timedOut != 0
		t.Held = held != 0 && !t.State.Final() && t.State != sched.TaskExecuted
		t.Progress = -1
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := later.finish(ctx, tx, func(pos int) *sched.TaskSpec { return &out[pos].Spec }); err != nil {
		return nil, err
	}
	return out, nil
}

// attachCopies reads the copies of the given tasks (sorted by index) and
// sets each task's Progress to the largest progress of a live copy.
func attachCopies(ctx context.Context, tx *Tx, id sched.SetID, tasks []sched.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	// +?: see "No joins per task" in store.go.
	rows, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE set_id = +? AND idx BETWEEN +? AND +? ORDER BY id`,
		id, tasks[0].Index, tasks[len(tasks)-1].Index)
	if err != nil {
		return fmt.Errorf("read copies: %w", err)
	}
	defer rows.Close()
	sc := newCopyScanner()
	for rows.Next() {
		c, err := sc.scan(rows)
		if err != nil {
			return err
		}
		// tasks are sorted by index: no map of them to make per read.
		i, ok := slices.BinarySearchFunc(tasks, c.Task.Index, func(t sched.Task, idx int32) int { return cmp.Compare(t.Index, idx) })
		if !ok {
			continue
		}
		t := &tasks[i]
		t.Copies = append(t.Copies, c)
		if c.State.Live() && c.Progress > t.Progress {
			t.Progress = c.Progress
		}
	}
	return rows.Err()
}

const copyCols = `id, set_id, idx, worker, slot, speculative, state, started_at, ended_at, progress, cpu_seconds, run_seconds,
	attempt, exit_code, signal, timed_out`

type scanner interface{ Scan(...any) error }

func scanCopy(r scanner) (sched.Copy, error) {
	return newCopyScanner().scan(r)
}

// copyScanner scans rows of copyCols into destinations made once for
// all the rows of a query: scanned into a function's locals, each of them
// (Scan takes their addresses) and the arguments' slice would escape to
// the heap again for every copy.
type copyScanner struct {
	c              sched.Copy
	spec           int
	state          string
	started, ended int64
	timedOut       int
	dest           []any
}

func newCopyScanner() *copyScanner {
	s := &copyScanner{}
	c := &s.c
	s.dest = []any{&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &s.spec, &s.state, &s.started, &s.ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &c.Attempt, &c.ExitCode, &c.Signal, &s.timedOut}
	return s
}

// scan reads the row r is on.
func (s *copyScanner) scan(r scanner) (sched.Copy, error) {
	s.c = sched.Copy{}
	if err := r.Scan(s.dest...); err != nil {
		return s.c, err
	}
	c := s.c
	c.Speculative, c.TimedOut = s.spec != 0, s.timedOut != 0
	c.State = sched.CopyState(s.state)
	c.StartedAt, c.EndedAt = fromNanos(s.started), fromNanos(s.ended)
	return c, nil
}

// GetOutput returns the output of a requested task's current attempt
// (Output.Attempt): finished, or canceled after its request with a kept
// result. offset and limit select a byte range
// of each stream (limit 0 = DefaultOutputRead). Errors: EINVALID (offset
// or limit negative or beyond MaxOutputOffset), ENOTFOUND,
// EFAILEDPRECONDITION (the task is not requested or has no result yet).
func (db *DB) GetOutput(ctx context.Context, owner string, ref sched.TaskRef, offset, limit int64) (sched.Output, error) {
	var out sched.Output
	if offset < 0 || limit < 0 || offset > MaxOutputOffset || limit > MaxOutputOffset {
		// Bounded so that offset+1 and offset+limit never overflow in SQL.
		return out, sched.Errorf(sched.EINVALID, "offset %d and limit %d must be between 0 and %d bytes", offset, limit, int64(MaxOutputOffset))
	}
	if limit == 0 {
		limit = DefaultOutputRead
	}
	err := db.read(ctx, func(tx *Tx) error {
		set, err := getSet(ctx, tx, owner, ref.Set)
		if err != nil {
			return err
		}
		state, err := taskState(ctx, tx, set, ref.Index)
		if err != nil {
			return err
		}
		out.State = state
		switch state {
		case sched.TaskDisclosed:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d is disclosed: request it to read its output", ref.Index)
		case sched.TaskExecuted:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d has executed but is not requested: request it to read its output", ref.Index)
		case sched.TaskRequested:
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d is requested and has not finished yet: wait for it", ref.Index)
		}
		var tOut, tErr, timedOut int
		// The attempt in the same read: a retry between two reads would
		// label one attempt's output with the next one's number.
		err = tx.QueryRowContext(ctx, `SELECT copy_id, worker, substr(stdout, ?, ?), substr(stderr, ?, ?), length(stdout), length(stderr),
			stdout_truncated, stderr_truncated, exit_code, timed_out, cpu_seconds, slot_seconds,
			(SELECT attempt FROM tasks WHERE set_id = o.set_id AND idx = o.idx) FROM outputs o WHERE set_id = ? AND idx = ?`,
			offset+1, limit, offset+1, limit, ref.Set, ref.Index).
			Scan(&out.Copy, &out.Worker, &out.Stdout, &out.Stderr, &out.StdoutSize, &out.StderrSize, &tOut, &tErr,
				&out.ExitCode, &timedOut, &out.CPUSeconds, &out.SlotSeconds, &out.Attempt)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.EFAILEDPRECONDITION, "task %d was canceled before it produced a result: there is no output", ref.Index)
		} else if err != nil {
			return fmt.Errorf("read output: %w", err)
		}
		out.StdoutTruncated, out.StderrTruncated, out.TimedOut = tOut != 0, tErr != 0, timedOut != 0
		out.Files, err = keptList(ctx, tx, out.Copy)
		return err
	})
	return out, err
}
