package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"batchd/sched"
)

// TaskArray is a disclosed task array: Count tasks with the values First,
// First+Step, ..., all with Spec. The store keeps it once; each of its
// tasks refers to it.
type TaskArray struct {
	First, Step int64
	Count       int32
	Spec        sched.TaskSpec
}

// NewTaskArray checks the values first..last by step (0: 1) and returns the
// array. Errors: EINVALID for a reversed range or a negative step,
// ERESOURCEEXHAUSTED for more than MaxTasksPerSet values.
func NewTaskArray(first, last, step int64, spec sched.TaskSpec) (TaskArray, error) {
	if step == 0 {
		step = 1
	}
	if step < 0 {
		return TaskArray{}, sched.Errorf(sched.EINVALID, "array step %d is negative: give the range low to high with a positive step", step)
	}
	if last < first {
		return TaskArray{}, sched.Errorf(sched.EINVALID, "array range %d-%d is reversed (or empty): give LOW-HIGH with LOW <= HIGH", first, last)
	}
	// (last-first)/step+1 without overflow for any int64 pair.
	d := (uint64(last) - uint64(first)) / uint64(step)
	if d >= MaxTasksPerSet {
		return TaskArray{}, sched.Errorf(sched.ERESOURCEEXHAUSTED, "array %d-%d:%d has %d tasks; a set holds at most %d", first, last, step, d+1, MaxTasksPerSet)
	}
	n := d + 1
	return TaskArray{First: first, Step: step, Count: int32(n), Spec: spec}, nil
}

// Value is the array's value for its i-th task (from 0).
func (a TaskArray) Value(i int32) int64 { return a.First + int64(i)*a.Step }

// arrayRef is how a task of an array keeps its spec: "@" and the array's id.
func arrayRef(id int64) string { return "@" + strconv.FormatInt(id, 10) }

// storedArray is a row of task_arrays, its spec decoded.
type storedArray struct {
	firstIndex int32
	firstValue int64
	step       int64
	spec       sched.TaskSpec
}

// arrayCache keeps the arrays read lately: they never change once written,
// so a task of an array decodes its spec without a query.
type arrayCache struct {
	mu sync.Mutex
	m  map[int64]*storedArray
}

// maxCachedArrays bounds the cache; past it the cache starts over.
const maxCachedArrays = 4096

func (c *arrayCache) get(id int64) *storedArray {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *arrayCache) put(id int64, a *storedArray) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedArrays {
		c.m = map[int64]*storedArray{}
	}
	c.m[id] = a
}

// insertArray writes the array of set's tasks from firstIndex and returns
// the spec each of its task rows keeps.
func insertArray(ctx context.Context, tx *Tx, set sched.SetID, firstIndex int64, a TaskArray) (string, error) {
	buf, err := json.Marshal(a.Spec)
	if err != nil {
		return "", fmt.Errorf("encode array spec: %w", err)
	}
	r, err := tx.ExecContext(ctx, `INSERT INTO task_arrays (set_id, first_index, count, first_value, step, spec) VALUES (?, ?, ?, ?, ?, ?)`,
		set, firstIndex, a.Count, a.First, a.Step, string(buf))
	if err != nil {
		return "", fmt.Errorf("insert array: %w", err)
	}
	id, _ := r.LastInsertId()
	return arrayRef(id), nil
}

// isArrayRef says whether a stored spec refers to an array.
func isArrayRef(spec string) bool { return strings.HasPrefix(spec, "@") }

// taskSpec decodes the spec stored for task idx: a spec of its own, or its
// array's with the task's value in sched.ArrayValueEnv. Do not call it while
// rows of tx are open (it may query); collect with specLater instead.
func taskSpec(ctx context.Context, tx *Tx, spec string, idx int32, out *sched.TaskSpec) error {
	if !isArrayRef(spec) {
		return decodeSpec(spec, out)
	}
	id, err := strconv.ParseInt(spec[1:], 10, 64)
	if err != nil {
		return fmt.Errorf("bad array reference %q", spec)
	}
	a := tx.arrays.get(id)
	if a == nil {
		var (
			s   string
			row storedArray
		)
		err := tx.QueryRowContext(ctx, `SELECT first_index, first_value, step, spec FROM task_arrays WHERE id = ?`, id).
			Scan(&row.firstIndex, &row.firstValue, &row.step, &s)
		if err == sql.ErrNoRows {
			return fmt.Errorf("array %d of task %d is missing", id, idx)
		} else if err != nil {
			return fmt.Errorf("read array %d: %w", id, err)
		}
		if err := decodeSpec(s, &row.spec); err != nil {
			return fmt.Errorf("decode array %d spec: %w", id, err)
		}
		a = &row
		tx.arrays.put(id, a)
	}
	*out = a.spec
	env := make(map[string]string, len(a.spec.Env)+1)
	for k, v := range a.spec.Env {
		env[k] = v
	}
	env[sched.ArrayValueEnv] = strconv.FormatInt(a.firstValue+int64(idx-a.firstIndex)*a.step, 10)
	out.Env = env
	// Argv is shared by every task of the array: a copy, so that no caller
	// can change another task's.
	out.Argv = append([]string(nil), a.spec.Argv...)
	return nil
}

// specLater collects the array tasks met while rows are open, to decode
// once they are closed.
type specLater struct {
	refs []string
	idx  []int32
	pos  []int
}

// decode decodes spec into out now, or, when it refers to an array,
// remembers it as the spec of the pos-th result, to decode in finish.
func (l *specLater) decode(spec string, idx int32, pos int, out *sched.TaskSpec) error {
	if isArrayRef(spec) {
		l.refs, l.idx, l.pos = append(l.refs, spec), append(l.idx, idx), append(l.pos, pos)
		return nil
	}
	return decodeSpec(spec, out)
}

// finish decodes the array tasks collected (call after the rows closed);
// at(pos) is where the pos-th result's spec goes.
func (l *specLater) finish(ctx context.Context, tx *Tx, at func(pos int) *sched.TaskSpec) error {
	for i, ref := range l.refs {
		if err := taskSpec(ctx, tx, ref, l.idx[i], at(l.pos[i])); err != nil {
			return err
		}
	}
	return nil
}
