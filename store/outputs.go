package store

import (
	"context"
	"database/sql"
	"fmt"

	"batchd/sched"
)

// Bounds of a GetOutputs page.
const (
	// DefaultOutputsPageBytes and MaxOutputsPageBytes bound the bytes of
	// stdout and stderr one page carries.
	DefaultOutputsPageBytes, MaxOutputsPageBytes = 4 << 20, 16 << 20
	// MaxOutputsPageTasks is the most tasks one page names.
	MaxOutputsPageTasks = MaxTaskPage
)

// OutputsCursor is where a GetOutputs page starts: the Pos-th of the
// named indexes (or, with none named, the task with index Pos), from these
// offsets in its two streams.
type OutputsCursor struct {
	Pos                  int64
	StdoutOff, StderrOff int64
}

// OutputsInput selects tasks whose outputs to read.
type OutputsInput struct {
	Owner string
	Set   sched.SetID
	// Indexes are the tasks to read in order; nil reads the tasks from
	// First, Count of them (0: to the set's end).
	Indexes      []int32
	First, Count int32
	MaxBytes     int64 // 0: DefaultOutputsPageBytes
	From         OutputsCursor
}

// TaskOutput is one task's output in a GetOutputs page, or the piece of it
// that fitted: Stdout and Stderr start at StdoutOffset and StderrOffset.
type TaskOutput struct {
	Index int32
	// Unreadable says why there is no output ("" when there is).
	Unreadable                 string
	Output                     sched.Output
	StdoutOffset, StderrOffset int64
}

// OutputsPage is one page of GetOutputs; Next is nil on the last page.
type OutputsPage struct {
	Outputs []TaskOutput
	Next    *OutputsCursor
}

// outputMeta is what a page needs to know of a task before reading bytes.
type outputMeta struct {
	idx        int32
	state      string
	has        bool
	copyID     int64
	worker     string
	outSize    int64
	errSize    int64
	outTrunc   int
	errTrunc   int
	exitCode   int32
	timedOut   int
	cpuSeconds float64
	slotSec    float64
}

// outputMetaCols reads the outputs view's two parts (migration 0029)
// itself: a big output's row (b), or the output in the winning copy's row
// (c); a LEFT JOIN on the view would read every output.
const outputMetaCols = `t.idx, t.state, coalesce(b.copy_id, c.id) IS NOT NULL, coalesce(b.copy_id, c.id, 0), coalesce(b.worker, c.worker, ''),
	coalesce(length(b.stdout), length(c.out_stdout), 0), coalesce(length(b.stderr), length(c.out_stderr), 0),
	coalesce(b.stdout_truncated, c.out_flags & 1, 0), coalesce(b.stderr_truncated, (c.out_flags >> 1) & 1, 0), coalesce(b.exit_code, c.exit_code, 0),
	coalesce(b.timed_out, c.timed_out, 0), coalesce(b.cpu_seconds, c.cpu_seconds, 0), coalesce(b.slot_seconds, c.run_seconds, 0)
	FROM tasks t LEFT JOIN outputs_big b ON b.set_id = t.set_id AND b.idx = t.idx
	LEFT JOIN copies c ON c.id = t.win_copy AND c.out_stdout IS NOT NULL`

func scanOutputMeta(r interface{ Scan(...any) error }) (outputMeta, error) {
	var m outputMeta
	err := r.Scan(&m.idx, &m.state, &m.has, &m.copyID, &m.worker, &m.outSize, &m.errSize, &m.outTrunc, &m.errTrunc,
		&m.exitCode, &m.timedOut, &m.cpuSeconds, &m.slotSec)
	return m, err
}

// GetOutputs reads a page of the outputs of the owner's set: the named
// tasks in order, or every task by index, each under GetOutput's rules (a
// task that is disclosed, executed, unfinished or canceled before its
// result comes back with the reason and no bytes), until MaxBytes of
// stdout and stderr or MaxOutputsPageTasks tasks. A task whose streams do
// not fit in what is left of the page ends it, unless it is the first: the
// first is cut, and the next page carries on in it. Errors: EINVALID (a
// bad budget or cursor), ENOTFOUND (no such set of the owner, or a named
// index past its end).
func (db *DB) GetOutputs(ctx context.Context, in OutputsInput) (OutputsPage, error) {
	var page OutputsPage
	budget := in.MaxBytes
	if budget == 0 {
		budget = DefaultOutputsPageBytes
	}
	if budget < 0 || budget > MaxOutputsPageBytes {
		return page, sched.Errorf(sched.EINVALID, "max_bytes %d: want 1 to %d bytes (0: %d)", in.MaxBytes, int64(MaxOutputsPageBytes), int64(DefaultOutputsPageBytes))
	}
	from := in.From
	if from.Pos < 0 || from.StdoutOff < 0 || from.StderrOff < 0 || from.StdoutOff > MaxOutputOffset || from.StderrOff > MaxOutputOffset ||
		(in.Indexes != nil && from.Pos > int64(len(in.Indexes))) {
		return page, sched.Errorf(sched.EINVALID, "bad page token: start again without one")
	}
	body := func(tx *Tx) error {
		set, err := getSet(ctx, tx, in.Owner, in.Set)
		if err != nil {
			return err
		}
		for _, i := range in.Indexes {
			if i < 0 || int64(i) >= set.Counts.Total {
				return sched.Errorf(sched.ENOTFOUND, "task %d not found: set %d has tasks 0 to %d", i, set.ID, set.Counts.Total-1)
			}
		}
		end := set.Counts.Total
		pos, so, se := from.Pos, from.StdoutOff, from.StderrOff
		if in.Indexes != nil {
			end = int64(len(in.Indexes))
		} else {
			if in.First < 0 || in.Count < 0 || int64(in.First) >= set.Counts.Total {
				return sched.Errorf(sched.ENOTFOUND, "tasks from %d not found: set %d has tasks 0 to %d", in.First, set.ID, set.Counts.Total-1)
			}
			if in.Count > 0 {
				end = min(end, int64(in.First)+int64(in.Count))
			}
			pos = max(pos, int64(in.First))
		}
		used := int64(0)
		for pos < end && len(page.Outputs) < MaxOutputsPageTasks {
			// The next tasks' sizes, without their bytes.
			metas, err := outputMetas(ctx, tx, in, pos, min(end-pos, 512))
			if err != nil {
				return err
			}
			if len(metas) == 0 {
				break
			}
			for _, m := range metas {
				if len(page.Outputs) >= MaxOutputsPageTasks {
					break
				}
				o := TaskOutput{Index: m.idx, StdoutOffset: min(so, m.outSize), StderrOffset: min(se, m.errSize)}
				o.Output.State = sched.TaskState(m.state)
				switch {
				case o.Output.State == sched.TaskDisclosed:
					o.Unreadable = "disclosed: request it to read its output"
				case o.Output.State == sched.TaskExecuted:
					o.Unreadable = "executed but not requested: request it to read its output"
				case o.Output.State == sched.TaskRequested:
					o.Unreadable = "requested and not finished yet"
				case !m.has:
					o.Unreadable = "canceled before it produced a result"
				}
				if o.Unreadable != "" {
					page.Outputs = append(page.Outputs, o)
					pos, so, se = pos+1, 0, 0
					continue
				}
				wantOut, wantErr := m.outSize-o.StdoutOffset, m.errSize-o.StderrOffset
				left := budget - used
				if wantOut+wantErr > left && used > 0 {
					page.Next = &OutputsCursor{Pos: pos, StdoutOff: so, StderrOff: se}
					return nil
				}
				takeOut := min(wantOut, left)
				takeErr := min(wantErr, left-takeOut)
				err := tx.QueryRowContext(ctx, `SELECT substr(stdout, ?, ?), substr(stderr, ?, ?) FROM outputs WHERE set_id = ? AND idx = ?`,
					o.StdoutOffset+1, takeOut, o.StderrOffset+1, takeErr, in.Set, m.idx).Scan(&o.Output.Stdout, &o.Output.Stderr)
				if err != nil {
					return fmt.Errorf("read output of task %d: %w", m.idx, err)
				}
				if o.Output.Stdout == nil {
					o.Output.Stdout = []byte{}
				}
				if o.Output.Stderr == nil {
					o.Output.Stderr = []byte{}
				}
				o.Output.StdoutSize, o.Output.StderrSize = m.outSize, m.errSize
				o.Output.StdoutTruncated, o.Output.StderrTruncated = m.outTrunc != 0, m.errTrunc != 0
				o.Output.ExitCode, o.Output.TimedOut = m.exitCode, m.timedOut != 0
				o.Output.CPUSeconds, o.Output.SlotSeconds = m.cpuSeconds, m.slotSec
				o.Output.Copy, o.Output.Worker = sched.CopyID(m.copyID), sched.WorkerID(m.worker)
				page.Outputs = append(page.Outputs, o)
				used += int64(len(o.Output.Stdout) + len(o.Output.Stderr))
				if takeOut < wantOut || takeErr < wantErr {
					// Cut: the next page carries on in this task.
					page.Next = &OutputsCursor{Pos: pos, StdoutOff: o.StdoutOffset + int64(len(o.Output.Stdout)), StderrOff: o.StderrOffset + int64(len(o.Output.Stderr))}
					return nil
				}
				pos, so, se = pos+1, 0, 0
			}
		}
		if pos < end {
			page.Next = &OutputsCursor{Pos: pos}
		}
		return nil
	}
	err := db.read(ctx, func(tx *Tx) error {
		if err := body(tx); err != nil {
			return err
		}
		return keptOfPage(ctx, tx, page.Outputs)
	})
	return page, err
}

// outputMetas reads the sizes of n tasks from position pos of in's
// selection.
func outputMetas(ctx context.Context, tx *Tx, in OutputsInput, pos, n int64) ([]outputMeta, error) {
	out := make([]outputMeta, 0, n)
	if in.Indexes != nil {
		for _, i := range in.Indexes[pos : pos+n] {
			m, err := scanOutputMeta(tx.QueryRowContext(ctx, `SELECT `+outputMetaCols+` WHERE t.set_id = ? AND t.idx = ?`, in.Set, i))
			if err == sql.ErrNoRows {
				return nil, sched.Errorf(sched.ENOTFOUND, "task %d of set %d not found", i, in.Set)
			} else if err != nil {
				return nil, fmt.Errorf("read output sizes: %w", err)
			}
			out = append(out, m)
		}
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+outputMetaCols+` WHERE t.set_id = ? AND t.idx >= ? ORDER BY t.idx LIMIT ?`, in.Set, pos, n)
	if err != nil {
		return nil, fmt.Errorf("read output sizes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanOutputMeta(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
