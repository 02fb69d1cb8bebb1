package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"batchd/store"
)

// A winning copy suspended on the server's order held no slot and was not
// late while suspended: the trace's latency leaves the suspension out.
func TestTraceLatencyLeavesSuspensionsOut(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "batchd.db")
	db := store.NewDB(path)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := sql.Open("sqlite3_batchd", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	const s = int64(1e9)
	for _, q := range []string{
		`INSERT INTO task_sets (id, owner, created_at) VALUES (1, 'u', 1)`,
		`INSERT INTO tasks (set_id, idx, spec, state, disclosed_at) VALUES (1, 0, '{}', 'finished', 1)`,
		// Decided at 10 s, ran 2 s, suspended 5 s, reported at 17.5 s.
		fmt.Sprintf(`INSERT INTO copies (id, set_id, idx, worker, slot, state, started_at, ended_at, run_seconds, suspended_seconds)
			VALUES (1, 1, 0, 'w', 0, 'won', %d, %d, 2, 5)`, 10*s, 17*s+s/2),
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := db.ExportTrace(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(tr.Latency-0.5) > 1e-9 {
		t.Fatalf("trace latency %g s, want 0.5", tr.Latency)
	}
}
