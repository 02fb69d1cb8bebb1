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
// start decision to the commit of its report minus its run time, from the
// store at path (the distribution whose median is Trace.Latency), sorted.
func latencies(ctx context.Context, path string) ([]float64, error) {
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT run_seconds, started_at, ended_at FROM copies WHERE state = 'won' AND ended_at > started_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []float64
	for rows.Next() {
		var run float64
		var start, end int64
		if err := rows.Scan(&run, &start, &end); err != nil {
			return nil, err
		}
		out = append(out, max(0, float64(end-start)/1e9-run))
	}
	slices.Sort(out)
	return out, rows.Err()
}

// quantile is the q-quantile of sorted xs (NaN when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	return xs[int(q*float64(len(xs)-1))]
}

var nan = math.NaN()
