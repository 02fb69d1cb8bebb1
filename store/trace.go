package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"batchd/sched"
)

// RecordSchedRun notes the scheduler configuration a server start runs with
// (for `batchd sim replay`: which policy the recorded history ran under).
func (db *DB) RecordSchedRun(ctx context.Context, cfg sched.Config) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sched_runs (started_at, config) VALUES (?, ?)`, nanos(tx.now), string(b))
		return err
	})
}

// recordWorkerEvent notes that a worker came up with slots (and the one
// user it serves, "" for anyone), or went down.
func recordWorkerEvent(ctx context.Context, tx *Tx, w sched.WorkerID, up bool, slots int32, canSuspend bool, memMB int64, bound string) error {
	ev := "down"
	if up {
		ev = "up"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO worker_events (at, worker, event, slots, can_suspend, memory_mb, bound_user) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		nanos(tx.now), w, ev, slots, boolInt(canSuspend), memMB, bound)
	if err != nil {
		return fmt.Errorf("record worker event: %w", err)
	}
	return nil
}

// ExportTrace returns what the store recorded of the task sets created in
// [from, to) (zero times: no bound) as a trace for sim.Replay: each task's
// disclosure, request and cancel times, estimate and flags, the run times
// of its copies in start order (exact for copies that ran to their end,
// negative for killed ones, NaN for lost ones), the workers' up and down
// times with their slots, and the scheduler configuration of the last
// server start before to (Trace.Config zero when none was recorded: a
// store from before migration 0014). The simulator never reads the
// database; this is its only way in.
func (db *DB) ExportTrace(ctx context.Context, from, to time.Time) (*sched.Trace, error) {
	lo, hi := int64(0), int64(math.MaxInt64)
	if !from.IsZero() {
		lo = nanos(from)
	}
	if !to.IsZero() {
		hi = nanos(to)
	}
	tr := &sched.Trace{}
	secs := func(n int64) float64 {
		if n == 0 {
			return 0
		}
		return float64(n) / 1e9
	}
	err := db.read(ctx, func(tx *Tx) error {
		// The configuration.
		var cfgJSON string
		err := tx.QueryRowContext(ctx, `SELECT config FROM sched_runs WHERE started_at < ? ORDER BY started_at DESC, id DESC LIMIT 1`, hi).Scan(&cfgJSON)
		switch {
		case err == nil:
			if err := json.Unmarshal([]byte(cfgJSON), &tr.Config); err != nil {
				return fmt.Errorf("recorded scheduler configuration: %w", err)
			}
			tr.ConfigText = tr.Config.String()
		case errors.Is(err, sql.ErrNoRows):
		default:
			return fmt.Errorf("read scheduler configuration: %w", err)
		}

		// Sets and tasks.
		rows, err := tx.QueryContext(ctx, `SELECT s.id, s.owner, s.max_running, t.idx, t.estimate, t.no_speculation, t.deadline, t.cpus, t.memory_mb, t.gpus,
				t.disclosed_at, t.requested_at, t.canceled_at, t.executed_at, COALESCE(h.heard_at, 0)
			FROM task_sets s JOIN tasks t ON t.set_id = s.id
			LEFT JOIN request_heard h ON h.set_id = t.set_id AND h.requested_at = t.requested_at
			WHERE s.created_at >= ? AND s.created_at < ? AND s.staged = 0 ORDER BY s.id, t.idx`, lo, hi)
		if err != nil {
			return fmt.Errorf("read tasks: %w", err)
		}
		pos := map[sched.SetID]int{}
		for rows.Next() {
			var (
				set                      sched.SetID
				owner                    string
				maxRun                   int32
				tk                       sched.TraceTask
				noSpec                   int
				disc, req, canceld, exec int64
				heard                    int64
			)
			if err := rows.Scan(&set, &owner, &maxRun, &tk.Index, &tk.EstimateSeconds, &noSpec, &tk.DeadlineSeconds, &tk.Cpus, &tk.MemoryMB, &tk.GPUs, &disc, &req, &canceld, &exec, &heard); err != nil {
				rows.Close()
				return err
			}
			tk.NoSpeculation = noSpec != 0
			tk.DisclosedAt, tk.RequestedAt, tk.CanceledAt, tk.ExecutedAt = secs(disc), secs(req), secs(canceld), secs(exec)
			if heard > req && req > 0 {
				tk.HeardAt = secs(heard)
			}
			i, ok := pos[set]
			if !ok {
				i = len(tr.Sets)
				pos[set] = i
				tr.Sets = append(tr.Sets, sched.TraceSet{ID: set, Owner: owner, MaxRunning: maxRun})
			}
			st := &tr.Sets[i]
			if int(tk.Index) != len(st.Tasks) {
				rows.Close()
				return fmt.Errorf("set %d: task %d missing from the store", set, len(st.Tasks))
			}
			st.Tasks = append(st.Tasks, tk)
			if tr.Start == 0 || tk.DisclosedAt < tr.Start {
				tr.Start = tk.DisclosedAt
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		// Copies, in start order per task; the latency of the winners.
		var lat []float64
		defer func() {
			if len(lat) > 0 {
				slices.Sort(lat)
				tr.Latency = lat[len(lat)/2]
			}
		}()
		cs, err := tx.QueryContext(ctx, `SELECT c.set_id, c.idx, c.state, c.run_seconds, c.suspended_seconds, c.started_at, c.ended_at
			FROM copies c JOIN task_sets s ON s.id = c.set_id
			WHERE s.created_at >= ? AND s.created_at < ? ORDER BY c.set_id, c.idx, c.id`, lo, hi)
		if err != nil {
			return fmt.Errorf("read copies: %w", err)
		}
		for cs.Next() {
			var (
				set          sched.SetID
				idx          int32
				state        string
				run, susp    float64
				start, ended int64
			)
			if err := cs.Scan(&set, &idx, &state, &run, &susp, &start, &ended); err != nil {
				cs.Close()
				return err
			}
			i, ok := pos[set]
			if !ok || int(idx) >= len(tr.Sets[i].Tasks) {
				continue
			}
			tk := &tr.Sets[i].Tasks[idx]
			switch state {
			case "won":
				tk.Copies = append(tk.Copies, math.Max(run, 1e-6))
				if ended > start {
					// Suspended on the server's order, the copy held no
					// slot and was not late.
					lat = append(lat, math.Max(0, float64(ended-start)/1e9-run-susp))
				}
			case "killed":
				if run <= 0 && ended > start {
					run = math.Max(0, float64(ended-start)/1e9-susp)
				}
				tk.Copies = append(tk.Copies, -math.Max(run, 1e-6))
			case "lost":
				tk.Copies = append(tk.Copies, math.NaN())
			default: // running or suspended: at least this long so far
				tk.Copies = append(tk.Copies, -math.Max(run, 1e-6))
			}
		}
		cs.Close()
		if err := cs.Err(); err != nil {
			return err
		}

		// Workers: from their recorded ups and downs, else (a store from
		// before migration 0014) every worker the store knows, up
		// throughout. Worker events do not record GPUs: a worker's are
		// those of its latest registration.
		ws, err := tx.QueryContext(ctx, `SELECT e.at, e.worker, e.event, e.slots, e.can_suspend, e.memory_mb, e.bound_user, COALESCE(w.gpus, 0)
			FROM worker_events e LEFT JOIN workers w ON w.id = e.worker WHERE e.at < ? ORDER BY e.at, e.id`, hi)
		if err != nil {
			return fmt.Errorf("read worker events: %w", err)
		}
		open := map[sched.WorkerID]int{}
		for ws.Next() {
			var (
				at    int64
				w     sched.WorkerID
				ev    string
				slots int32
				cs    int
				mem   int64
				bound string
				gpus  int32
			)
			if err := ws.Scan(&at, &w, &ev, &slots, &cs, &mem, &bound, &gpus); err != nil {
				ws.Close()
				return err
			}
			if i, ok := open[w]; ok {
				tr.Workers[i].Down = secs(at)
				delete(open, w)
			}
			if ev == "up" && slots > 0 {
				open[w] = len(tr.Workers)
				tr.Workers = append(tr.Workers, sched.TraceWorker{ID: w, Slots: slots, CanSuspend: cs != 0, MemoryMB: mem, GPUs: gpus, BoundUser: bound, Up: secs(at)})
			}
		}
		ws.Close()
		if err := ws.Err(); err != nil {
			return err
		}
		if len(tr.Workers) == 0 {
			wr, err := tx.QueryContext(ctx, `SELECT id, slots, can_suspend, memory_mb, bound_user, gpus FROM workers WHERE slots > 0 ORDER BY id`)
			if err != nil {
				return fmt.Errorf("read workers: %w", err)
			}
			defer wr.Close()
			for wr.Next() {
				var (
					w  sched.TraceWorker
					cs int
				)
				if err := wr.Scan(&w.ID, &w.Slots, &cs, &w.MemoryMB, &w.BoundUser, &w.GPUs); err != nil {
					return err
				}
				w.CanSuspend = cs != 0
				tr.Workers = append(tr.Workers, w)
			}
			return wr.Err()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Workers that went down before the first set was created play no
	// part.
	kept := tr.Workers[:0]
	for _, w := range tr.Workers {
		if w.Down == 0 || w.Down > tr.Start {
			kept = append(kept, w)
		}
	}
	tr.Workers = kept
	return tr, nil
}
