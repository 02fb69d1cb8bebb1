package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	"batchd/sched"
	_ "batchd/store" // registers the sqlite3_batchd driver
)

// latencies reads, for every copy that won, the time from the scheduler's
// start decision to the commit of its report minus its run time and minus
// the time it spent suspended on the server's order (a suspended copy is
// neither running nor late), and the time of that start decision (Unix
// seconds) and the seconds suspended, from the store at path, in decision
// order.
func latencies(ctx context.Context, path string) (lat, at, susp []float64, err error) {
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", path))
	if err != nil {
		return nil, nil, nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT run_seconds, suspended_seconds, started_at, ended_at FROM copies
		WHERE state = 'won' AND ended_at > started_at ORDER BY started_at, id`)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var run, s float64
		var start, end int64
		if err := rows.Scan(&run, &s, &start, &end); err != nil {
			return nil, nil, nil, err
		}
		lat = append(lat, copyLatency(start, end, run, s))
		at = append(at, float64(start)/1e9)
		susp = append(susp, s)
	}
	return lat, at, susp, rows.Err()
}

// copyLatency is a winning copy's latency: from its start decision (start,
// ns) to the commit of its report (end, ns), less the run time its worker
// reported and the seconds it spent suspended on the server's order.
func copyLatency(start, end int64, run, suspended float64) float64 {
	return max(0, float64(end-start)/1e9-run-suspended)
}

// suspension is the time one copy spent suspended on the server's order.
type suspension struct {
	Set     sched.SetID
	Index   int32
	State   string // the copy's end: won, killed, lost
	Seconds float64
}

// suspensions reads every copy that was suspended, from the store at path.
func suspensions(ctx context.Context, path string) ([]suspension, error) {
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT set_id, idx, state, suspended_seconds FROM copies WHERE suspended_seconds > 0 ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []suspension
	for rows.Next() {
		var s suspension
		if err := rows.Scan(&s.Set, &s.Index, &s.State, &s.Seconds); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// quantile is the q-quantile of xs (NaN when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

var nan = math.NaN()

// latencyAt is the recorded latency of the start decision nearest t (at in
// order): the latency of that moment, bursts and all.
func latencyAt(lat, at []float64) func(t float64) float64 {
	if len(lat) == 0 {
		return nil
	}
	return func(t float64) float64 {
		i, _ := slices.BinarySearch(at, t)
		if i == len(at) || (i > 0 && t-at[i-1] <= at[i]-t) {
			i--
		}
		return lat[i]
	}
}
