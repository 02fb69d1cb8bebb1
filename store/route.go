package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"batchd/sched"
)

// This file is routes (sched/route.go): the pool and partition a set's
// copies are routed to, kept on its row from its creation on, and the
// pool and partition each worker registered under.

// setSetRoute records a new set's route (nothing for the zero route).
func setSetRoute(ctx context.Context, tx *Tx, id sched.SetID, r sched.Route) error {
	if r.IsZero() {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE task_sets SET pool = ?, partition = ? WHERE id = ?`, r.Pool, r.Partition, id); err != nil {
		return fmt.Errorf("route set %d: %w", id, err)
	}
	return nil
}

// readSetRoute fills set.Route from its row.
func readSetRoute(ctx context.Context, tx *Tx, set *sched.TaskSet) error {
	if err := tx.QueryRowContext(ctx, `SELECT pool, partition FROM task_sets WHERE id = ?`, set.ID).
		Scan(&set.Route.Pool, &set.Route.Partition); err != nil {
		return fmt.Errorf("read route of set %d: %w", set.ID, err)
	}
	return nil
}

// pageRoutes fills the routes of a page of sets, in one query.
func pageRoutes(ctx context.Context, tx *Tx, sets []sched.TaskSet) error {
	if len(sets) == 0 {
		return nil
	}
	at := make(map[sched.SetID]int, len(sets))
	args := make([]any, len(sets))
	for i, s := range sets {
		at[s.ID], args[i] = i, s.ID
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, pool, partition FROM task_sets WHERE id IN (`+strings.Repeat(",?", len(sets))[1:]+`)
		AND (pool != '' OR partition != '')`, args...)
	if err != nil {
		return fmt.Errorf("read routes: %w", err)
	}
	return scanRoutes(rows, func(id sched.SetID, r sched.Route) { sets[at[id]].Route = r })
}

// scanRoutes calls set with each (id, pool, partition) row, and closes
// rows.
func scanRoutes(rows *sql.Rows, set func(sched.SetID, sched.Route)) error {
	defer rows.Close()
	for rows.Next() {
		var (
			id sched.SetID
			r  sched.Route
		)
		if err := rows.Scan(&id, &r.Pool, &r.Partition); err != nil {
			return err
		}
		set(id, r)
	}
	return rows.Err()
}

// loadSetRoutes fills the routes of the open sets a restart loads.
func loadSetRoutes(ctx context.Context, tx *Tx, snap *Snapshot) error {
	if len(snap.Sets) == 0 {
		return nil
	}
	at := make(map[sched.SetID]int, len(snap.Sets))
	for i, st := range snap.Sets {
		at[st.Set] = i
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, pool, partition FROM task_sets WHERE pool != '' OR partition != ''`)
	if err != nil {
		return fmt.Errorf("read routes: %w", err)
	}
	return scanRoutes(rows, func(id sched.SetID, r sched.Route) {
		if i, ok := at[id]; ok {
			snap.Sets[i].Route = r
		}
	})
}

// setWorkerRoute records the pool and partition a registering worker
// names.
func setWorkerRoute(ctx context.Context, tx *Tx, in RegisterInput) error {
	if _, err := tx.ExecContext(ctx, `UPDATE workers SET pool = ?, partition = ? WHERE id = ?`, in.Route.Pool, in.Route.Partition, in.Worker); err != nil {
		return fmt.Errorf("register worker route: %w", err)
	}
	return nil
}

// SetRoute returns set id's route (zero for a set that names none;
// ENOTFOUND when there is no such set).
func (db *DB) SetRoute(ctx context.Context, id sched.SetID) (sched.Route, error) {
	var r sched.Route
	err := db.read(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT pool, partition FROM task_sets WHERE id = ?`, id).Scan(&r.Pool, &r.Partition)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "task set %d not found", id)
		}
		return err
	})
	return r, err
}

// RouteKnown reports whether some worker, up or gone, has registered on
// route r (the zero route: always).
func (db *DB) RouteKnown(ctx context.Context, r sched.Route) (bool, error) {
	if r.IsZero() {
		return true, nil
	}
	var n int
	err := db.read(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM workers WHERE (pool != '' OR partition != '')
			AND (? = '' OR pool = ?) AND (? = '' OR partition = ?) LIMIT 1)`, r.Pool, r.Pool, r.Partition, r.Partition).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("look up route: %w", err)
	}
	return n > 0, nil
}

// routeHash folds a disclose's route into its content hash (unchanged
// for the zero route), so that a key replayed with another route is a
// conflict rather than a replay.
func routeHash(hash string, r sched.Route) string {
	if r.IsZero() {
		return hash
	}
	sum := sha256.Sum256([]byte(hash + "\x00pool=" + strconv.Quote(r.Pool) + "\x00partition=" + strconv.Quote(r.Partition)))
	return hex.EncodeToString(sum[:])
}
