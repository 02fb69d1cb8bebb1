package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"batchd/sched"
)

// queryTasksBefore is queryTasks as it was before it scanned into its
// result in place: the reference its output must equal.
func queryTasksBefore(ctx context.Context, tx *Tx, most int, q string, args ...any) ([]sched.Task, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	defer rows.Close()
	var (
		out   = make([]sched.Task, 0, min(most, 512))
		later specLater
	)
	for rows.Next() {
		var (
			t                                         sched.Task
			spec, state                               string
			disclosed, requested, executed, fin, canc int64
			timedOut, held                            int
		)
		if err := rows.Scan(&t.Set, &t.Index, &spec, &state, &disclosed, &requested, &executed, &fin, &canc,
			&t.VisibleResponseSeconds, &t.ServiceSeconds, &t.ExitCode, &timedOut, &t.Attempt, &held, &t.FailReason); err != nil {
			return nil, err
		}
		if err := later.decode(spec, t.Index, len(out), &t.Spec); err != nil {
			return nil, fmt.Errorf("decode spec of task %d/%d: %w", t.Set, t.Index, err)
		}
		t.State = sched.TaskState(state)
		t.DisclosedAt, t.RequestedAt, t.ExecutedAt = fromNanos(disclosed), fromNanos(requested), fromNanos(executed)
		t.FinishedAt, t.CanceledAt = fromNanos(fin), fromNanos(canc)
		t.TimedOut = timedOut != 0
		t.Held = held != 0 && !t.State.Final() && t.State != sched.TaskExecuted
		t.Progress = -1
		out = append(out, t)
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

// attachCopiesBefore is attachCopies as it was before it scanned its
// rows into one copyScanner: the reference.
func attachCopiesBefore(ctx context.Context, tx *Tx, id sched.SetID, tasks []sched.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	pos := make(map[int32]int, len(tasks))
	for i, t := range tasks {
		pos[t.Index] = i
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE set_id = +? AND idx BETWEEN +? AND +? ORDER BY id`,
		id, tasks[0].Index, tasks[len(tasks)-1].Index)
	if err != nil {
		return fmt.Errorf("read copies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCopyBefore(rows)
		if err != nil {
			return err
		}
		i, ok := pos[c.Task.Index]
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

func scanCopyBefore(r scanner) (sched.Copy, error) {
	var (
		c              sched.Copy
		spec           int
		state          string
		started, ended int64
		timedOut       int
	)
	if err := r.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &state, &started, &ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &c.Attempt, &c.ExitCode, &c.Signal, &timedOut); err != nil {
		return c, err
	}
	c.Speculative, c.TimedOut = spec != 0, timedOut != 0
	c.State = sched.CopyState(state)
	c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
	return c, nil
}

// TestTaskReadsUnchanged: what GetTasks and ListTasks (a watch's
// messages) return for a set of varied histories (won, failed and
// retried, timed out, speculative copies, live copies with progress,
// held, canceled, an array) equals what the reference read returns.
func TestTaskReadsUnchanged(t *testing.T) {
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const n = 40
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"sh", "-c", fmt.Sprint("exit ", i%3)}, Env: map[string]string{"I": fmt.Sprint(i)}}
	}
	if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: "w", Slots: 64}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs, Request: true})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	id := sched.CopyID(0)
	startCopy := func(i int32, spec bool) sched.CopyID {
		id++
		if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: id, Speculative: spec,
			Task: sched.TaskRef{Set: set, Index: i}, Slot: sched.SlotRef{Worker: "w", Slot: int32(id % 64)}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	finish := func(in ...FinishInput) {
		outs, err := db.FinishCopies(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
	}
	var prog []CopyProgress
	for i := int32(0); i < 30; i++ {
		c := startCopy(i, false)
		switch {
		case i%5 == 4: // left running, with progress
			prog = append(prog, CopyProgress{Copy: c, Progress: float64(i) / 40})
		case i%5 == 3: // a speculative copy beside it; the original wins
			s := startCopy(i, true)
			finish(FinishInput{Worker: "w", Copy: c, RunSeconds: 0.5, ExitCode: int32(i % 3)},
				FinishInput{Worker: "w", Copy: s, RunSeconds: 0.2, Killed: true})
		case i%7 == 0:
			finish(FinishInput{Worker: "w", Copy: c, RunSeconds: 1, TimedOut: true})
		default:
			finish(FinishInput{Worker: "w", Copy: c, RunSeconds: 0.1 * float64(i), ExitCode: int32(i % 3)})
		}
	}
	if _, err := db.Heartbeat(ctx, "w", prog); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Retry(ctx, RetryInput{Owner: "u", SetID: set, Indexes: []int32{1, 2, 7}}); err != nil {
		t.Fatal(err)
	}
	c := startCopy(1, false) // the retried task's second attempt wins
	finish(FinishInput{Worker: "w", Copy: c, RunSeconds: 0.3})
	if _, err := db.Hold(ctx, HoldInput{Owner: "u", SetID: set, Indexes: []int32{30, 31, 32}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cancel(ctx, CancelInput{Owner: "u", SetID: set, Indexes: []int32{33, 34, 32}}); err != nil {
		t.Fatal(err)
	}
	arr, err := NewTaskArray(1, 5, 1, sched.TaskSpec{Argv: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Disclose(ctx, DiscloseInput{Owner: "u", SetID: set, Array: &arr}); err != nil {
		t.Fatal(err)
	}

	all := make([]int32, 0, n+5)
	for i := int32(0); i < n+5; i++ {
		all = append(all, i)
	}
	want := func(q string, args ...any) []sched.Task {
		var tasks []sched.Task
		err := db.read(ctx, func(tx *Tx) (err error) {
			if tasks, err = queryTasksBefore(ctx, tx, len(all), q, args...); err != nil {
				return err
			}
			return attachCopiesBefore(ctx, tx, set, tasks)
		})
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	ref := want(`SELECT `+taskCols+` FROM tasks WHERE set_id = ? ORDER BY idx`, set)
	kinds := map[string]bool{}
	for _, x := range ref {
		kinds[string(x.State)] = true
		if x.Held {
			kinds["held"] = true
		}
		if x.Progress > 0 {
			kinds["progress"] = true
		}
		if x.Attempt > 1 {
			kinds["retried"] = true
		}
		for _, c := range x.Copies {
			if c.Speculative {
				kinds["speculative"] = true
			}
		}
	}
	for _, k := range []string{"finished", "canceled", "requested", "held", "progress", "retried", "speculative"} {
		if !kinds[k] {
			t.Errorf("the set has no %s task: %v", k, kinds)
		}
	}
	for _, idx := range [][]int32{all, {3, 4}, {1}, {33, 38, 39}} {
		_, got, err := db.GetTasks(ctx, "u", set, idx)
		if err != nil {
			t.Fatal(err)
		}
		var w []sched.Task
		for _, x := range ref {
			for _, i := range idx {
				if x.Index == i {
					w = append(w, x)
				}
			}
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("GetTasks %v:\n got %+v\nwant %+v", idx, got, w)
		}
	}
	for _, size := range []int32{7, 1000} {
		var got []sched.Task
		for token := ""; ; {
			_, page, next, err := db.ListTasks(ctx, "u", set, TaskPage{PageSize: size, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if token = next; token == "" {
				break
			}
		}
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("ListTasks in pages of %d:\n got %+v\nwant %+v", size, got, ref)
		}
	}
}
