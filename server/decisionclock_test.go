package server_test

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	_ "batchd/store" // registers the sqlite3_batchd driver
)

// The store's record of a copy is the copy the scheduler judged: its start
// is the time of the decision, its end the time the scheduler heard of it.
// The scheduler learns its latency (from a start decision to the report,
// less the reported run time) on its own clock; a replay of the store's
// record learns it from the record. With a clock that moves between
// readings, as a real one does while a write waits and runs, the two must
// still agree: for a copy started on its request (Server.decide) and
// heard of in a batch of reports (Server.finishBatch), the first sample,
// which the scheduler takes as its estimate at once (sched/lag.go).
func TestRecordedLatencyIsTheSchedulers(t *testing.T) {
	t.Parallel()
	clk := newClock()
	clk.step = 7 * time.Millisecond
	b := setup(t, options{clock: clk})
	w, _ := b.worker(t, "w1", 1)
	const n = 1
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(n), Request: true})).TaskSet
	for range n {
		st := w.start()
		clk.Advance(3 * time.Second)
		if _, err := w.finish(st.CopyId, "", 0, 2); err != nil {
			t.Fatal(err)
		}
	}
	lag := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{})).Metrics.LatencySeconds
	db, err := sql.Open("sqlite3_batchd", fmt.Sprintf("file:%s?mode=ro", filepath.Join(b.dir, "batchd.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT (ended_at - started_at) / 1e9 - run_seconds FROM copies WHERE set_id = ? AND state = 'won'`, set.Id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var recorded []float64
	for rows.Next() {
		var x float64
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != n {
		t.Fatalf("%d won copies recorded, want %d", len(recorded), n)
	}
	if want := recorded[0]; math.Abs(lag-want) > 1e-6 {
		t.Errorf("the scheduler learned a latency of %.3f s; the store's record gives %.3f s", lag, want)
	}
	if lag < 1 {
		t.Errorf("latency %.3f s, want at least the 1 s between each start and its report less the run time", lag)
	}
}
