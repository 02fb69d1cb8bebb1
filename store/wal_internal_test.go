package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

// TestWALFileBounded: a reader that holds its snapshot across many
// commits keeps their pages in the WAL, so the file grows past its
// limit; once that reader ends, the file goes back under the limit as
// later commits come, instead of keeping its high-water mark for good.
func TestWALFileBounded(t *testing.T) {
	path := t.TempDir() + "/batchd.db"
	db := NewDB(path)
	db.WALLimit = 1 << 20
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	reader, err := db.ro.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	arg := strings.Repeat("x", 2000)
	specs := make([]sched.TaskSpec, 100)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"echo", arg}}
	}
	for k := 0; k < 20; k++ { // about 4 MB of specs, 20 commits
		if _, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: specs}); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.WALFileBytes(); got <= 3<<20 {
		t.Fatalf("WAL file %d bytes with a reader held across 4 MB of commits: want past 3 MB", got)
	}
	if err := reader.Rollback(); err != nil {
		t.Fatal(err)
	}

	// A hang guard only: the checkpointer runs at most every 100 ms and
	// a loaded machine may run it late.
	one := specs[:1]
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: one}); err != nil {
			t.Fatal(err)
		}
		if db.WALFileBytes() <= db.WALLimit {
			break
		}
		if time.Now().After(deadline) {
			tr, busy := db.TruncateStats()
			t.Fatalf("WAL file stays at %d bytes after its reader ended (limit %d; %d truncations, %d found readers)",
				db.WALFileBytes(), db.WALLimit, tr, busy)
		}
	}
	if runs, failed, lastErr, _ := db.CheckpointStats(); runs == 0 || failed != 0 {
		t.Fatalf("checkpoint stats: %d runs, %d failed (%s)", runs, failed, lastErr)
	}
}
