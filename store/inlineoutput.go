// A winning copy's output in the copy's own row when it is small (migration
// 0029): the UPDATE that ends the copy keeps it, and no row of its own is
// written. A bigger output keeps a row in outputs_big. Readers read the
// outputs view of both, as they read the table before.

package store

import (
	"context"
	"fmt"

	"batchd/sched"
)

// inlineOutputMax is the most output bytes (stdout and stderr together,
// after the cap) kept in the copy's row; the batched finish takes no
// bigger output (batchOutputMax), so all its outputs are kept there.
const inlineOutputMax = 4 << 10

// outFlags is copies.out_flags for the cuts of stdout and stderr.
func outFlags(stdoutCut, stderrCut bool) int64 {
	return int64(boolInt(stdoutCut) | boolInt(stderrCut)<<1)
}

// keepOutput keeps winning copy c's output: in its row when small, else in
// a row of its own. in's run and CPU seconds and exit are those its copy's
// row was ended with (applyEnd).
func keepOutput(ctx context.Context, tx *Tx, c sched.Copy, in FinishInput, stdout, stderr []byte, tOut, tErr bool, reported float64) error {
	if len(stdout)+len(stderr) <= inlineOutputMax {
		if _, err := tx.ExecContext(ctx, `UPDATE copies SET out_stdout = ?, out_stderr = ?, out_flags = ?, out_reported = ? WHERE id = ?`,
			stdout, stderr, outFlags(tOut, tErr), reported, c.ID); err != nil {
			return fmt.Errorf("keep output of copy %d: %w", c.ID, translate(err))
		}
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outputs_big (set_id, idx, copy_id, worker, stdout, stderr, stdout_truncated, stderr_truncated,
		exit_code, timed_out, cpu_seconds, slot_seconds, reported_slot_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Task.Set, c.Task.Index, c.ID, c.Slot.Worker, stdout, stderr, boolInt(tOut), boolInt(tErr),
		in.ExitCode, boolInt(in.TimedOut), in.CPUSeconds, in.RunSeconds, reported); err != nil {
		return fmt.Errorf("keep output of copy %d: %w", c.ID, translate(err))
	}
	return nil
}
