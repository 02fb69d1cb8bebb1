package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"batchd/client"
	"batchd/sched"
)

// copyRow is one live copy as the store recorded it: when the decision
// that started it was stamped, when its end was (Unix seconds; 0 while
// live), the run time its worker reported (or the server's for a killed
// copy), and whether the scheduler started it as a speculative copy.
type copyRow struct {
	ID          int64
	Set         sched.SetID
	Index       int32
	Speculative bool
	State       string // won, killed, lost, ...
	Started     float64
	Ended       float64
	Run         float64
	Suspended   float64
}

// copyRows reads every copy from the store at path, in start order.
func copyRows(ctx context.Context, path string) ([]copyRow, error) {
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, set_id, idx, speculative, state, started_at, COALESCE(ended_at, 0),
		COALESCE(run_seconds, 0), suspended_seconds FROM copies ORDER BY started_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []copyRow
	for rows.Next() {
		var c copyRow
		var start, end int64
		if err := rows.Scan(&c.ID, &c.Set, &c.Index, &c.Speculative, &c.State, &start, &end, &c.Run, &c.Suspended); err != nil {
			return nil, err
		}
		c.Started, c.Ended = float64(start)/1e9, float64(end)/1e9
		out = append(out, c)
	}
	return out, rows.Err()
}

// lagPoint is the live scheduler's latency estimate (Scheduler.Lag, as the
// server's metrics give it) at a time (Unix seconds).
type lagPoint struct{ At, Lag float64 }

// pollLag reads the server's latency estimate every period until stop is
// closed, and returns the points where it changed (and the first).
func pollLag(ctx context.Context, cl *client.Client, period time.Duration, stop <-chan struct{}) func() []lagPoint {
	var mu sync.Mutex
	var pts []lagPoint
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			info, err := cl.GetCluster(ctx)
			if err != nil {
				continue
			}
			v := info.Metrics.LatencySeconds
			mu.Lock()
			if len(pts) == 0 || pts[len(pts)-1].Lag != v {
				pts = append(pts, lagPoint{float64(time.Now().UnixNano()) / 1e9, v})
			}
			mu.Unlock()
		}
	}()
	return func() []lagPoint {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return pts
	}
}

// liveLag is the live scheduler's latency estimate at t as pts polled it
// (each point's value from its time to the next; 0 before the first).
func liveLag(pts []lagPoint) func(t float64) float64 {
	return func(t float64) float64 {
		i, _ := slices.BinarySearchFunc(pts, t, func(p lagPoint, t float64) int { return cmp.Compare(p.At, t) })
		if i < len(pts) && pts[i].At == t {
			return pts[i].Lag
		}
		if i == 0 {
			return 0
		}
		return pts[i-1].Lag
	}
}
