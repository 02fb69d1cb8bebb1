package store

import (
	"context"
	"fmt"
)

// setWorkerGPUs records the GPUs a registering worker offers (0: none),
// for the cluster's view and restarts.
func setWorkerGPUs(ctx context.Context, tx *Tx, in RegisterInput) error {
	if _, err := tx.ExecContext(ctx, `UPDATE workers SET gpus = ? WHERE id = ?`, in.GPUs, in.Worker); err != nil {
		return fmt.Errorf("register worker gpus: %w", err)
	}
	return nil
}
