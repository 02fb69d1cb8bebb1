package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"batchd/store"
)

func TestLatencyAt(t *testing.T) {
	f := latencyAt([]float64{1, 2, 3}, []float64{10, 20, 30})
	for _, c := range []struct{ t, want float64 }{{0, 1}, {10, 1}, {14, 1}, {16, 2}, {25, 2}, {26, 3}, {100, 3}} {
		if got := f(c.t); got != c.want {
			t.Errorf("latencyAt(%g) = %g, want %g", c.t, got, c.want)
		}
	}
	if latencyAt(nil, nil) != nil {
		t.Error("no samples: want no function")
	}
}

// TestLatenciesLeaveSuspensionsOut: a winning copy suspended on the
// server's order was neither running nor late while suspended: its
// latency sample is its start decision to its report less its run time
// and less its suspension, read from a real store.
func TestLatenciesLeaveSuspensionsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "batchd.db")
	st := store.NewDB(path)
	if err := st.Open(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite3_batchd", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const s = int64(1e9)
	for _, q := range []string{
		`INSERT INTO task_sets (id, owner, created_at) VALUES (1, 'u', 1)`,
		`INSERT INTO tasks (set_id, idx, spec, state, disclosed_at) VALUES (1, 0, '{}', 'finished', 1), (1, 1, '{}', 'finished', 1)`,
		// Decided at 10 s, ran 2 s, suspended 5 s, reported at 17.5 s.
		fmt.Sprintf(`INSERT INTO copies (id, set_id, idx, worker, slot, state, started_at, ended_at, run_seconds, suspended_seconds)
			VALUES (1, 1, 0, 'w', 0, 'won', %d, %d, 2, 5)`, 10*s, 17*s+s/2),
		// Decided at 11 s, ran 1 s, never suspended, reported at 12.25 s.
		fmt.Sprintf(`INSERT INTO copies (id, set_id, idx, worker, slot, state, started_at, ended_at, run_seconds)
			VALUES (2, 1, 1, 'w', 1, 'won', %d, %d, 1)`, 11*s, 12*s+s/4),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	lat, at, susp, err := latencies(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5, 0.25}
	if len(lat) != 2 || math.Abs(lat[0]-want[0]) > 1e-9 || math.Abs(lat[1]-want[1]) > 1e-9 {
		t.Fatalf("latencies %v, want %v", lat, want)
	}
	if at[0] != 10 || at[1] != 11 || susp[0] != 5 || susp[1] != 0 {
		t.Fatalf("decided at %v, suspended %v", at, susp)
	}
}
