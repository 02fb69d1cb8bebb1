// The snapshot the server rebuilds its scheduler from after a restart.

package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sort"
	"time"

	"batchd/sched"
)

// SetSnapshot is one set's unfinished tasks, to rebuild the scheduler.
type SetSnapshot struct {
	Set         sched.SetID
	Owner       string
	DisclosedAt time.Time
	MaxRunning  int32
	Tasks       []sched.TaskInfo
	// Waiting: the set waits for After (its dependencies) to end.
	Waiting bool
	After   []sched.Dependency
	// Route is where the set's copies may run (route.go).
	Route sched.Route
}

// Duration is the run time of one winning copy, or (Censored) how long a
// copy that lost the race had run when the winner finished, for the
// scheduler's estimators (β, t_new) after a restart.
type Duration struct {
	Set      sched.SetID
	Owner    string
	Seconds  float64
	Censored bool
}

// MaxDurations is how many of the latest durations Load returns.
const MaxDurations = 100_000

// Snapshot is what the scheduler must know again after a restart.
type Snapshot struct {
	Workers   []sched.Worker // workers that were up
	Sets      []SetSnapshot  // sets with unfinished tasks, by id
	Durations []Duration     // the latest MaxDurations durations in the order the scheduler saw them
	Copies    []sched.Copy   // live copies, by id
	MaxCopyID sched.CopyID
}

// loadOpenTasks reads the sets with unfinished tasks and those tasks into
// snap.Sets. A restart with 10⁶ queued tasks spends most of its time here:
// each set's slice is made at its size from the set's counts, and the rows
// are read from the driver directly (database/sql's Scan converted every
// column of every row through reflection).
func loadOpenTasks(ctx context.Context, tx *Tx, snap *Snapshot) error {
	sets, err := tx.QueryContext(ctx, `SELECT id, owner, created_at, max_running, n_disclosed + n_executed + n_requested, waiting FROM task_sets
		WHERE n_disclosed + n_executed + n_requested > 0 ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read open sets: %w", err)
	}
	byID := map[sched.SetID]int{}
	for sets.Next() {
		var (
			st      SetSnapshot
			created int64
			open    int
		)
		if err := sets.Scan(&st.Set, &st.Owner, &created, &st.MaxRunning, &open, &st.Waiting); err != nil {
			sets.Close()
			return err
		}
		st.DisclosedAt, st.Tasks = fromNanos(created), make([]sched.TaskInfo, 0, open)
		byID[st.Set] = len(snap.Sets)
		snap.Sets = append(snap.Sets, st)
	}
	sets.Close()
	if err := sets.Err(); err != nil {
		return err
	}
	cur := -1
	return tx.rawRows(ctx, `SELECT t.set_id, t.idx, t.estimate, t.no_speculation, t.deadline, t.state, t.requested_at, t.cpus, t.memory_mb, t.held, t.gpus
		FROM task_sets s CROSS JOIN tasks t ON t.set_id = s.id -- CROSS: the open sets outside, their tasks by primary key inside
		WHERE s.n_disclosed + s.n_executed + s.n_requested > 0 AND t.state IN ('disclosed', 'executed', 'requested')
		ORDER BY s.id, t.idx -- not t.set_id: the order the join gives, with no sort of every row`, func(v []driver.Value) error {
		id := sched.SetID(asInt(v[0]))
		if cur < 0 || snap.Sets[cur].Set != id {
			i, ok := byID[id]
			if !ok {
				return fmt.Errorf("open task of set %d, which has no open tasks by its counts", id)
			}
			cur = i
		}
		st := &snap.Sets[cur]
		st.Tasks = append(st.Tasks, sched.TaskInfo{Index: int32(asInt(v[1])), EstimateSeconds: asFloat(v[2]), NoSpeculation: asInt(v[3]) != 0,
			DeadlineSeconds: asFloat(v[4]), State: openState(v[5]), RequestedAt: seconds(fromNanos(asInt(v[6]))),
			Cpus: int32(asInt(v[7])), MemoryMB: int64(asInt(v[8])), Held: asInt(v[9]) != 0,
			GPUs: int32(asInt(v[10]))})
		return nil
	})
}

// openState is the state of an open task, without a string per row.
func openState(v driver.Value) sched.TaskState {
	switch st := sched.TaskState(asString(v)); st {
	case sched.TaskDisclosed:
		return sched.TaskDisclosed
	case sched.TaskExecuted:
		return sched.TaskExecuted
	case sched.TaskRequested:
		return sched.TaskRequested
	default:
		return st
	}
}

// Load reads the snapshot the server rebuilds its scheduler from.
func (db *DB) Load(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	err := db.read(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM copies`).Scan(&snap.MaxCopyID); err != nil {
			return fmt.Errorf("max copy id: %w", err)
		}
		ws, err := tx.QueryContext(ctx, `SELECT id, hostname, slots, can_suspend, last_heartbeat, memory_mb, isolation, bound_user, limits,
			ends_at, hand_back, gpus, pool, partition FROM workers WHERE state = 'up' ORDER BY id`)
		if err != nil {
			return fmt.Errorf("read workers: %w", err)
		}
		for ws.Next() {
			var (
				w        sched.Worker
				cs, hbk  int
				hb, ends int64
			)
			if err := ws.Scan(&w.ID, &w.Hostname, &w.Slots, &cs, &hb, &w.MemoryMB, &w.Isolation, &w.BoundUser, &w.Limits, &ends, &hbk, &w.GPUs, &w.Route.Pool, &w.Route.Partition); err != nil {
				ws.Close()
				return err
			}
			w.Name, w.CanSuspend, w.State, w.LastHeartbeat = string(w.ID), cs != 0, "up", fromNanos(hb)
			w.EndsAt, w.HandBack = optTime(ends), hbk != 0
			snap.Workers = append(snap.Workers, w)
		}
		ws.Close()
		if err := ws.Err(); err != nil {
			return fmt.Errorf("read workers: %w", err)
		}
		if err := loadOpenTasks(ctx, tx, &snap); err != nil {
			return err
		}
		if err := loadWaiting(ctx, tx, &snap); err != nil {
			return err
		}
		if err := loadSetRoutes(ctx, tx, &snap); err != nil {
			return err
		}
		// The winners, and after each winner the copies of its task that
		// lost the race (live when it finished, killed then or at the next
		// decision), as censored samples: that is the order in which the
		// scheduler learnt them (copy finished, then its rivals' run times).
		ds, err := tx.QueryContext(ctx, `SELECT set_id, owner, secs, censored FROM (
				SELECT c.set_id, s.owner, c.run_seconds AS secs, c.ended_at AS at, c.id AS wid, 0 AS censored, c.id AS id
				FROM copies c JOIN task_sets s ON s.id = c.set_id WHERE c.state = 'won'
				UNION ALL
				SELECT l.set_id, s.owner, MAX(0, (w.ended_at - l.started_at) / 1e9), w.ended_at, w.id, 1, l.id
				FROM copies w JOIN copies l ON l.set_id = w.set_id AND l.idx = w.idx AND l.state = 'killed'
					AND l.started_at <= w.ended_at AND l.ended_at >= w.ended_at
				JOIN task_sets s ON s.id = w.set_id WHERE w.state = 'won'
				ORDER BY at DESC, wid DESC, censored DESC, id DESC LIMIT ?)
			ORDER BY at, wid, censored, id`, MaxDurations)
		if err != nil {
			return fmt.Errorf("read durations: %w", err)
		}
		for ds.Next() {
			var (
				d        Duration
				censored int
			)
			if err := ds.Scan(&d.Set, &d.Owner, &d.Seconds, &censored); err != nil {
				ds.Close()
				return err
			}
			d.Censored = censored != 0
			snap.Durations = append(snap.Durations, d)
		}
		ds.Close()
		if err := ds.Err(); err != nil {
			return err
		}
		cs, err := tx.QueryContext(ctx, `SELECT `+copyCols+` FROM copies WHERE state IN ('running', 'suspended') ORDER BY id`)
		if err != nil {
			return fmt.Errorf("read live copies: %w", err)
		}
		defer cs.Close()
		for cs.Next() {
			c, err := scanCopy(cs)
			if err != nil {
				return err
			}
			snap.Copies = append(snap.Copies, c)
		}
		return cs.Err()
	})
	sort.Slice(snap.Copies, func(i, j int) bool { return snap.Copies[i].ID < snap.Copies[j].ID })
	return snap, err
}
