package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	_ "batchd/store" // registers the sqlite3_batchd driver
)

// latencies reads, for every copy that won, the time from the scheduler's
// start decision to the commit of its report minus its run time (the
// distribution whose median is Trace.Latency), and the time of that start
// decision (Unix seconds), from the store at path, in decision order.
func latencies(ctx context.Context, path string) (lat, at []float64, err error) {
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", path))
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT run_seconds, started_at, ended_at FROM copies WHERE state = 'won' AND ended_at > started_at ORDER BY started_at, id`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var run float64
		var start, end int64
		if err := rows.Scan(&run, &start, &end); err != nil {
			return nil, nil, err
		}
		lat = append(lat, max(0, float64(end-start)/1e9-run))
		at = append(at, float64(start)/1e9)
	}
	return lat, at, rows.Err()
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
