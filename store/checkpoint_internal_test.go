package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

// TestCheckpointBesideWriter: the writing connection never checkpoints
// (a commit that did copied the WAL and synced the database inside the
// server's state lock), and the checkpointer moves committed pages into
// the database file after commits.
func TestCheckpointBesideWriter(t *testing.T) {
	path := t.TempDir() + "/batchd.db"
	db := NewDB(path)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var auto int
	if err := db.write(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto)
	}); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Fatalf("the writer checkpoints itself every %d pages", auto)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	before := st.Size()
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
	// Generous: a loaded machine may run the checkpointer late, never
	// wrongly.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// The file grows while a checkpoint copies; it is counted once done.
		if runs, _, _, _ := db.CheckpointStats(); st.Size() >= before+3<<20 && runs > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (%d before 4 MB of commits, %d checkpoints, %d failed): nothing checkpointed",
				st.Size(), before, db.checkpoints.Load(), db.ckErrors.Load())
		}
	}
	if runs, failed, lastErr, _ := db.CheckpointStats(); runs == 0 || failed != 0 {
		t.Fatalf("checkpoint stats: %d runs, %d failed (%s)", runs, failed, lastErr)
	}
}
