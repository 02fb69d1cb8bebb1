// Kept files: the files an attempt's winning copy left that matched its
// keep patterns, stored with the result (migration 0019 says why in the
// database) and read under the output's rules.

package store

import (
	"context"
	"database/sql"
	"fmt"

	"batchd/sched"
)

// KeptContent is a kept file as a worker reports it: the file, and its
// content when it was kept.
type KeptContent struct {
	File    sched.KeptFile
	Content []byte
}

// keepFiles stores the files copy c left, as its owner's, in the winning
// copy's transaction. A file that would take the owner past tx.keep bytes
// stored is listed as not kept, with the reason.
func keepFiles(ctx context.Context, tx *Tx, c sched.CopyID, owner string, files []KeptContent) error {
	if len(files) == 0 {
		return nil
	}
	var used int64
	if tx.keep > 0 {
		if err := tx.QueryRowContext(ctx, `SELECT IFNULL(SUM(size), 0) FROM kept_files WHERE owner = ? AND not_kept = ''`, owner).Scan(&used); err != nil {
			return fmt.Errorf("sum kept files of %s: %w", owner, err)
		}
	}
	for _, f := range files {
		kf, content := f.File, f.Content
		if kf.NotKept == "" {
			kf.Size = int64(len(content))
			if tx.keep > 0 && used+kf.Size > tx.keep {
				kf.NotKept = fmt.Sprintf("%d bytes: over the %s of kept files a user may store (batchd serve --keep-max-user), %s stored already",
					kf.Size, bytesText(tx.keep), bytesText(used))
			}
		}
		if kf.NotKept != "" {
			content = nil
		} else {
			used += kf.Size
			if content == nil {
				content = []byte{}
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO kept_files (copy_id, path, owner, size, mode, not_kept, content) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c, kf.Path, owner, kf.Size, kf.Mode, kf.NotKept, content); err != nil {
			return fmt.Errorf("keep file %q of copy %d: %w", kf.Path, c, translate(err))
		}
	}
	return nil
}

// keptList lists the files copy c kept or refused, in path order.
func keptList(ctx context.Context, tx *Tx, c sched.CopyID) ([]sched.KeptFile, error) {
	rows, err := tx.QueryContext(ctx, `SELECT path, size, mode, not_kept FROM kept_files WHERE copy_id = ? ORDER BY path`, c)
	if err != nil {
		return nil, fmt.Errorf("list kept files of copy %d: %w", c, err)
	}
	defer rows.Close()
	var out []sched.KeptFile
	for rows.Next() {
		var f sched.KeptFile
		if err := rows.Scan(&f.Path, &f.Size, &f.Mode, &f.NotKept); err != nil {
			return nil, fmt.Errorf("list kept files of copy %d: %w", c, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// keptOfPage fills in the kept files of the outputs in a GetOutputs page
// that start their task (the first piece lists them), in one query over
// the range of their copy ids rather than one a task: a page of 10,000
// outputs without kept files costs one index probe.
func keptOfPage(ctx context.Context, tx *Tx, outs []TaskOutput) error {
	at := map[sched.CopyID]int{}
	lo, hi := sched.CopyID(0), sched.CopyID(0)
	for i, o := range outs {
		if o.Unreadable != "" || o.StdoutOffset != 0 || o.StderrOffset != 0 || o.Output.Copy == 0 {
			continue
		}
		c := o.Output.Copy
		at[c] = i
		if lo == 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	if len(at) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT copy_id, path, size, mode, not_kept FROM kept_files WHERE copy_id BETWEEN ? AND ? ORDER BY copy_id, path`, lo, hi)
	if err != nil {
		return fmt.Errorf("list kept files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c sched.CopyID
			f sched.KeptFile
		)
		if err := rows.Scan(&c, &f.Path, &f.Size, &f.Mode, &f.NotKept); err != nil {
			return fmt.Errorf("list kept files: %w", err)
		}
		if i, ok := at[c]; ok {
			outs[i].Output.Files = append(outs[i].Output.Files, f)
		}
	}
	return rows.Err()
}

// dropKeptOfOutputs deletes the kept files of the current results of the
// set's tasks that where selects (SQL over outputs o), before the results
// themselves go.
func dropKeptOfOutputs(ctx context.Context, tx *Tx, where string, args ...any) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM kept_files WHERE copy_id IN (SELECT o.copy_id FROM outputs o WHERE `+where+`)`, args...); err != nil {
		return fmt.Errorf("drop kept files: %w", err)
	}
	return nil
}

// KeptFileRead is a piece of one kept file.
type KeptFileRead struct {
	File    sched.KeptFile
	Content []byte
	Attempt int32
}

// GetKeptFile reads a piece of a file that attempt (0: the current one) of
// the owner's task kept: offset and limit as GetOutput's (limit 0 =
// DefaultOutputRead). Errors: as GetAttemptOutput; ENOTFOUND (no such file
// among the attempt's), EFAILEDPRECONDITION (the file is listed but was
// not kept, with the reason).
func (db *DB) GetKeptFile(ctx context.Context, owner string, ref sched.TaskRef, attempt int32, path string, offset, limit int64) (KeptFileRead, error) {
	var out KeptFileRead
	if offset < 0 || limit < 0 || offset > MaxOutputOffset || limit > MaxOutputOffset {
		return out, sched.Errorf(sched.EINVALID, "offset %d and limit %d must be between 0 and %d bytes", offset, limit, int64(MaxOutputOffset))
	}
	if limit == 0 {
		limit = DefaultOutputRead
	}
	// The result's rules and its copy: a one-byte read of its streams.
	o, err := db.GetAttemptOutput(ctx, owner, ref, attempt, 0, 1)
	if err != nil {
		return out, err
	}
	out.Attempt = o.Attempt
	err = db.read(ctx, func(tx *Tx) error {
		f := &out.File
		err := tx.QueryRowContext(ctx, `SELECT path, size, mode, not_kept, substr(content, ?, ?) FROM kept_files WHERE copy_id = ? AND path = ?`,
			offset+1, limit, o.Copy, path).Scan(&f.Path, &f.Size, &f.Mode, &f.NotKept, &out.Content)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "task %d of set %d (attempt %d) kept no file %q: batchctl output --files %d/%d lists them",
				ref.Index, ref.Set, o.Attempt, path, ref.Set, ref.Index)
		} else if err != nil {
			return fmt.Errorf("read kept file: %w", err)
		}
		if f.NotKept != "" {
			return sched.Errorf(sched.EFAILEDPRECONDITION, "%s was not kept: %s", path, f.NotKept)
		}
		if out.Content == nil {
			out.Content = []byte{}
		}
		return nil
	})
	return out, err
}

// bytesText formats n bytes for a person: B, KiB, MiB or GiB.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
