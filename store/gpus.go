package store

import (
	"context"
	"fmt"
)

// setWorkerGPUs records the GPUs a registering worker offers (0: none),
// for the cluster's view, restarts and the trace. A registration with no
// slots (a goodbye) keeps those it offered last: it runs nothing either
// way, and worker events do not record GPUs, so the trace reads a
// worker's here (ExportTrace).
func setWorkerGPUs(ctx context.Context, tx *Tx, in RegisterInput) error {
	if in.Slots == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workers SET gpus = ? WHERE id = ?`, in.GPUs, in.Worker); err != nil {
		return fmt.Errorf("register worker gpus: %w", err)
	}
	return nil
}
