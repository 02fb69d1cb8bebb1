// Workers: registration, heartbeats, their live copies and their loss.

package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"batchd/sched"
)

func getCopy(ctx context.Context, tx *Tx, id sched.CopyID) (sched.Copy, string, error) {
	var outcome string
	row := tx.QueryRowContext(ctx, `SELECT `+copyCols+`, outcome FROM copies WHERE id = ?`, id)
	var c sched.Copy
	var (
		spec           int
		state          string
		started, ended int64
		timedOut       int
	)
	err := row.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &spec, &state, &started, &ended,
		&c.Progress, &c.CPUSeconds, &c.RunSeconds, &c.Attempt, &c.ExitCode, &c.Signal, &timedOut, &outcome)
	c.Speculative, c.TimedOut = spec != 0, timedOut != 0
	c.State = sched.CopyState(state)
	c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
	return c, outcome, err
}

// HeldCopy is a copy a worker says it still runs when it registers.
type HeldCopy struct {
	Copy       sched.CopyID
	Slot       int32
	Suspended  bool
	Progress   float64
	CPUSeconds float64
}

// RegisterInput is a worker's Register call.
type RegisterInput struct {
	Worker     sched.WorkerID
	Hostname   string
	Slots      int32
	CanSuspend bool
	Version    string
	Running    []HeldCopy
	MemoryMB   int64 // memory offered to tasks, MiB
	GPUs       int32 // GPUs offered to tasks
	// Route is the pool and partition the worker names (sched/route.go).
	Route sched.Route
	// Isolation, BoundUser and Limits: how the worker keeps tasks apart
	// ("none" when empty), the one user it serves ("" = anyone) and what
	// it enforces per copy (see sched.Worker).
	Isolation, BoundUser, Limits string
	// EndsAt is when the worker stops taking copies (zero: never), and
	// HandBack says it is a pilot that hands its copies back (pilot.go).
	EndsAt   time.Time
	HandBack bool
	// Stopping says this is the worker's goodbye: it lists every copy it
	// started and has not reported, so any other copy live on it was
	// never started there. Those queue again without counting as losses
	// to a pilot end (pilot.go).
	Stopping bool
}

// RegisterResult is what a Register did.
type RegisterResult struct {
	Attached []sched.Copy   // held copies the server still wants
	Lost     []sched.Copy   // live copies of the worker it no longer holds
	Kill     []sched.CopyID // held copies the server does not want
}

// RegisterWorker records a worker as up. Every copy the store holds as live
// on it but not held any more is lost; every held copy whose task still
// wants it is attached again (running or suspended as the worker says);
// the other held copies are to be killed.
func (db *DB) RegisterWorker(ctx context.Context, in RegisterInput) (RegisterResult, error) {
	var res RegisterResult
	if in.Worker == "" {
		return res, sched.Errorf(sched.EINVALID, "worker name is empty")
	}
	if in.Slots < 0 {
		return res, sched.Errorf(sched.EINVALID, "slots must not be negative")
	}
	err := db.write(ctx, func(tx *Tx) error {
		now := nanos(tx.now)
		if _, err := tx.ExecContext(ctx, `INSERT INTO workers (id, hostname, slots, can_suspend, state, last_heartbeat, registered_at, version, memory_mb,
			isolation, bound_user, limits)
			VALUES (?, ?, ?, ?, 'up', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, slots = excluded.slots,
			can_suspend = excluded.can_suspend, state = 'up', last_heartbeat = excluded.last_heartbeat, registered_at = excluded.registered_at,
			version = excluded.version, memory_mb = excluded.memory_mb, isolation = excluded.isolation, bound_user = excluded.bound_user,
			limits = excluded.limits`, in.Worker, in.Hostname, in.Slots, boolInt(in.CanSuspend), now, now, in.Version, in.MemoryMB,
			sched.NormalIsolation(in.Isolation), in.BoundUser, in.Limits); err != nil {
			return fmt.Errorf("register worker: %w", err)
		}
		if err := setWorkerPilot(ctx, tx, in); err != nil {
			return err
		}
		if err := setWorkerGPUs(ctx, tx, in); err != nil {
			return err
		}
		if err := setWorkerRoute(ctx, tx, in); err != nil {
			return err
		}
		if err := recordWorkerEvent(ctx, tx, in.Worker, true, in.Slots, in.CanSuspend, in.MemoryMB, in.BoundUser); err != nil {
			return err
		}
		live, err := liveCopies(ctx, tx, in.Worker)
		if err != nil {
			return err
		}
		byID := make(map[sched.CopyID]sched.Copy, len(live))
		for _, c := range live {
			byID[c.ID] = c
		}
		held := make(map[sched.CopyID]bool, len(in.Running))
		for _, h := range in.Running {
			if held[h.Copy] {
				continue
			}
			held[h.Copy] = true
			c, ok := byID[h.Copy]
			if !ok || h.Slot != c.Slot.Slot || h.Slot < 0 || h.Slot >= in.Slots {
				res.Kill = append(res.Kill, h.Copy)
				continue
			}
			var state string
			if err := tx.QueryRowContext(ctx, `SELECT state FROM tasks WHERE set_id = ? AND idx = ?`, c.Task.Set, c.Task.Index).Scan(&state); err != nil {
				return fmt.Errorf("read task of held copy: %w", err)
			}
			if state != string(sched.TaskDisclosed) && state != string(sched.TaskRequested) {
				res.Kill = append(res.Kill, h.Copy)
				held[h.Copy] = false // lost below: the task does not want it
				continue
			}
			c.State = sched.CopyRunning
			if h.Suspended {
				c.State = sched.CopySuspended
			}
			c.Progress, c.CPUSeconds = h.Progress, h.CPUSeconds
			if _, err := tx.ExecContext(ctx, `UPDATE copies SET state = ?, progress = ?, cpu_seconds = ? WHERE id = ?`,
				string(c.State), c.Progress, c.CPUSeconds, c.ID); err != nil {
				return fmt.Errorf("attach copy: %w", err)
			}
			if err := markSuspension(ctx, tx, c.ID, h.Suspended); err != nil {
				return err
			}
			res.Attached = append(res.Attached, c)
		}
		for _, c := range live {
			if held[c.ID] {
				continue
			}
			if err := loseCopyAs(ctx, tx, c.ID, !in.Stopping); err != nil {
				return err
			}
			res.Lost = append(res.Lost, c)
		}
		return nil
	})
	return res, err
}

// loseCopy marks a live copy lost and queues its task again, counting
// the loss against the task when its worker is a pilot (pilot.go).
func loseCopy(ctx context.Context, tx *Tx, id sched.CopyID) error {
	return loseCopyAs(ctx, tx, id, true)
}

// loseCopyAs is loseCopy; pilotEnd false leaves the task's count of
// losses to pilot ends alone (a copy its worker never started).
func loseCopyAs(ctx context.Context, tx *Tx, id sched.CopyID, pilotEnd bool) error {
	now := nanos(tx.now)
	var (
		ref sched.TaskRef
		w   sched.WorkerID
	)
	err := tx.QueryRowContext(ctx, `UPDATE copies SET state = 'lost', ended_at = ?, run_seconds = MAX(0, (? - started_at) / 1e9)
		WHERE id = ? AND state IN ('running', 'suspended') RETURNING set_id, idx, worker`, now, now, id).Scan(&ref.Set, &ref.Index, &w)
	if err == sql.ErrNoRows {
		return nil
	} else if err != nil {
		return fmt.Errorf("lose copy %d: %w", id, err)
	}
	tx.markFreeTask(ref)
	if pilotEnd {
		if _, err := tx.pilotLost(ctx, w, ref); err != nil {
			return err
		}
	}
	return lostAttempt(ctx, tx, ref)
}

func liveCopies(ctx context.Context, tx *Tx, w sched.WorkerID) ([]sched.Copy, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE worker = ? AND state IN ('running', 'suspended') ORDER BY id`, w)
	if err != nil {
		return nil, fmt.Errorf("read live copies: %w", err)
	}
	defer rows.Close()
	var out []sched.Copy
	for rows.Next() {
		c, err := scanCopy(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// LiveCopy is a live copy with what its worker needs to run it.
type LiveCopy struct {
	Copy  sched.Copy
	Spec  sched.TaskSpec
	Owner string
}

// WorkerCopies returns the live copies of worker w, by id, with their
// specs: what the worker should be running (or holding suspended) now.
func (db *DB) WorkerCopies(ctx context.Context, w sched.WorkerID) ([]LiveCopy, error) {
	var out []LiveCopy
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT c.id, c.set_id, c.idx, c.worker, c.slot, c.speculative, c.state, c.started_at, c.ended_at,
			c.progress, c.cpu_seconds, c.run_seconds, t.spec, s.owner, c.attempt
			FROM copies c JOIN tasks t ON t.set_id = c.set_id AND t.idx = c.idx JOIN task_sets s ON s.id = c.set_id
			WHERE c.worker = ? AND c.state IN ('running', 'suspended') ORDER BY c.id`, w)
		if err != nil {
			return fmt.Errorf("read live copies: %w", err)
		}
		defer rows.Close()
		var later specLater
		for rows.Next() {
			var (
				lc             LiveCopy
				spec, state    string
				isSpec         int
				started, ended int64
			)
			c := &lc.Copy
			if err := rows.Scan(&c.ID, &c.Task.Set, &c.Task.Index, &c.Slot.Worker, &c.Slot.Slot, &isSpec, &state, &started, &ended,
				&c.Progress, &c.CPUSeconds, &c.RunSeconds, &spec, &lc.Owner, &c.Attempt); err != nil {
				return err
			}
			c.Speculative, c.State = isSpec != 0, sched.CopyState(state)
			c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
			if err := later.decode(spec, c.Task.Index, len(out), &lc.Spec); err != nil {
				return fmt.Errorf("decode spec: %w", err)
			}
			out = append(out, lc)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		return later.finish(ctx, tx, func(pos int) *sched.TaskSpec { return &out[pos].Spec })
	})
	return out, err
}

// LoseWorker marks a worker whose lease lapsed (state "lease-lapsed") or
// who left ("gone") and loses its live copies, which it returns.
func (db *DB) LoseWorker(ctx context.Context, w sched.WorkerID, state string) ([]sched.Copy, error) {
	var lost []sched.Copy
	err := db.write(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE workers SET state = ?, left_at = CASE WHEN ? = 'gone' THEN ? ELSE 0 END WHERE id = ?`,
			state, state, nanos(tx.now), w); err != nil {
			return fmt.Errorf("mark worker: %w", err)
		}
		if err := recordWorkerEvent(ctx, tx, w, false, 0, false, 0, ""); err != nil {
			return err
		}
		live, err := liveCopies(ctx, tx, w)
		if err != nil {
			return err
		}
		for _, c := range live {
			if err := loseCopy(ctx, tx, c.ID); err != nil {
				return err
			}
		}
		lost = live
		return nil
	})
	return lost, err
}

// CopyProgress is one copy's progress in a heartbeat.
type CopyProgress struct {
	Copy       sched.CopyID
	Progress   float64
	CPUSeconds float64
}

// HeartbeatResult is what a heartbeat found.
type HeartbeatResult struct {
	Kill    []sched.CopyID // reported copies not live on the worker
	Changed []CopyProgress // live copies whose progress changed
	Missing []sched.CopyID // live copies of the worker it did not report
	// WriterWait is how long HeartbeatWrite waited for the writer.
	WriterWait time.Duration
	// Tx is how HeartbeatWrite's transaction's time went.
	Tx TxTimes
}

// Heartbeat records a worker's heartbeat and its copies' progress.
// Errors: ENOTFOUND (unknown worker).
func (db *DB) Heartbeat(ctx context.Context, w sched.WorkerID, copies []CopyProgress) (HeartbeatResult, error) {
	var res HeartbeatResult
	err := db.write(ctx, func(tx *Tx) error { return heartbeatTx(ctx, tx, w, time.Time{}, copies, &res) })
	return res, err
}

// heartbeatTx is Heartbeat's transaction; it fills res. heard is when
// the heartbeat was heard (zero: now): a copy started after it cannot
// be in it, so it is not missing from it (a write that waited for the
// writer may come after such starts).
func heartbeatTx(ctx context.Context, tx *Tx, w sched.WorkerID, heard time.Time, copies []CopyProgress, res *HeartbeatResult) error {
	if heard.IsZero() {
		heard = tx.now
	}
	r, err := tx.ExecContext(ctx, `UPDATE workers SET last_heartbeat = ? WHERE id = ?`, nanos(tx.now), w)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return sched.Errorf(sched.ENOTFOUND, "worker %s is not registered: register again", w)
	}
	for _, p := range copies {
		var (
			worker, state string
			progress      float64
		)
		err := tx.QueryRowContext(ctx, `SELECT worker, state, progress FROM copies WHERE id = ?`, p.Copy).Scan(&worker, &state, &progress)
		if err == sql.ErrNoRows || (err == nil && (worker != string(w) || !sched.CopyState(state).Live())) {
			res.Kill = append(res.Kill, p.Copy)
			continue
		} else if err != nil {
			return fmt.Errorf("read copy: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE copies SET progress = ?, cpu_seconds = ? WHERE id = ?`, p.Progress, p.CPUSeconds, p.Copy); err != nil {
			return fmt.Errorf("record progress: %w", err)
		}
		if p.Progress != progress {
			res.Changed = append(res.Changed, p)
		}
	}
	live, err := liveCopies(ctx, tx, w)
	if err != nil {
		return err
	}
	reported := make(map[sched.CopyID]bool, len(copies))
	for _, p := range copies {
		reported[p.Copy] = true
	}
	for _, c := range live {
		if !reported[c.ID] && !c.StartedAt.After(heard) {
			res.Missing = append(res.Missing, c.ID)
		}
	}
	return nil
}

// LoseCopies marks the given live copies of worker w lost (a worker that
// no longer reports them) and returns the ones it changed.
func (db *DB) LoseCopies(ctx context.Context, w sched.WorkerID, ids []sched.CopyID) ([]sched.Copy, error) {
	var lost []sched.Copy
	err := db.write(ctx, func(tx *Tx) error {
		for _, id := range ids {
			c, _, err := getCopy(ctx, tx, id)
			if err == sql.ErrNoRows {
				continue
			} else if err != nil {
				return fmt.Errorf("read copy %d: %w", id, err)
			}
			if c.Slot.Worker != w || !c.State.Live() {
				continue
			}
			// Its worker is up and does not report it: its order never
			// reached the worker, or its end was not reported. The copy
			// was not lost to a pilot's end.
			if err := loseCopyAs(ctx, tx, id, false); err != nil {
				return err
			}
			lost = append(lost, c)
		}
		return nil
	})
	return lost, err
}
