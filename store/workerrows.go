package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"batchd/sched"
)

// This file is the workers' rows as the cluster view and the pools read
// them. A worker that left is marked gone (with left_at): its goodbye
// followed by its lapse, or a lapse older than the server's retention.
// The live ones (up or lease-lapsed) are read through the partial index
// workers_live, with their busy slots from copies_live: a pool round or
// the cluster view costs the same with 10 or 10,000 pilots gone.

// workerCols are the columns listWorkers reads, busy slots included. The
// busy count's state IN (...) is copies_live's WHERE, so that it reads
// the worker's live copies through that index instead of every copy.
const workerCols = `w.id, w.hostname, w.slots, w.can_suspend, w.state, w.last_heartbeat, w.registered_at,
	(SELECT COUNT(*) FROM copies c WHERE c.worker = w.id AND c.state IN ('running', 'suspended') AND c.state = 'running'), w.memory_mb, w.isolation, w.bound_user, w.limits,
	w.ends_at, w.left_at, w.hand_back, w.gpus, w.pool, w.partition`

// liveWorkersQuery reads the live workers; its WHERE is workers_live's.
const liveWorkersQuery = `SELECT ` + workerCols + ` FROM workers w WHERE w.state != 'gone' ORDER BY w.id`

// ListWorkers returns the live workers (up or lease-lapsed), by id, with
// their busy slots (running copies).
func (db *DB) ListWorkers(ctx context.Context) ([]sched.Worker, error) {
	return db.listWorkers(ctx, liveWorkersQuery)
}

// ListAllWorkers returns every worker the store knows, those that left
// (gone) too, by id.
func (db *DB) ListAllWorkers(ctx context.Context) ([]sched.Worker, error) {
	return db.listWorkers(ctx, `SELECT `+workerCols+` FROM workers w ORDER BY w.id`)
}

func (db *DB) listWorkers(ctx context.Context, q string) ([]sched.Worker, error) {
	var out []sched.Worker
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("list workers: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				w                     sched.Worker
				canSusp, handBack     int
				hb, regd, ends, leftT int64
			)
			if err := rows.Scan(&w.ID, &w.Hostname, &w.Slots, &canSusp, &w.State, &hb, &regd, &w.BusySlots, &w.MemoryMB,
				&w.Isolation, &w.BoundUser, &w.Limits, &ends, &leftT, &handBack, &w.GPUs, &w.Route.Pool, &w.Route.Partition); err != nil {
				return err
			}
			w.Name, w.CanSuspend, w.HandBack = string(w.ID), canSusp != 0, handBack != 0
			w.LastHeartbeat, w.RegisteredAt = fromNanos(hb), fromNanos(regd)
			w.EndsAt, w.LeftAt = optTime(ends), optTime(leftT)
			out = append(out, w)
		}
		return rows.Err()
	})
	return out, err
}

// RetireWorkers marks gone the workers whose lease lapsed and that have
// been silent since before: they left without a word (a pilot killed
// with its job). It returns how many it marked.
func (db *DB) RetireWorkers(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := db.write(ctx, func(tx *Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE workers SET state = 'gone', left_at = ? WHERE state != 'gone' AND state = 'lease-lapsed' AND last_heartbeat < ?`,
			nanos(tx.now), nanos(before))
		if err != nil {
			return fmt.Errorf("retire workers: %w", err)
		}
		n, _ = r.RowsAffected()
		return nil
	})
	return int(n), err
}

// RegisteredWorkers returns those of names that have ever registered
// under worker user owner, live or gone, in the order given (each once).
func (db *DB) RegisteredWorkers(ctx context.Context, owner string, names []sched.WorkerID) ([]sched.WorkerID, error) {
	var out []sched.WorkerID
	err := db.read(ctx, func(tx *Tx) error {
		seen := make(map[sched.WorkerID]bool, len(names))
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM workers WHERE id = ? AND (SELECT owner FROM worker_owners WHERE worker = ?) = ?`,
				n, n, owner).Scan(&one)
			if err == sql.ErrNoRows {
				continue
			} else if err != nil {
				return fmt.Errorf("read worker %s: %w", n, err)
			}
			out = append(out, n)
		}
		return nil
	})
	return out, err
}
