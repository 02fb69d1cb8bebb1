package store

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"batchd/sched"
)

// walSalts reads the WAL file's header salts, which change each time the
// log starts over.
func walSalts(t *testing.T, db *DB) []byte {
	t.Helper()
	b, err := os.ReadFile(db.Path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 32 {
		t.Fatalf("a WAL of %d bytes has no header", len(b))
	}
	return b[16:24]
}

// TestLogStartsOverBeforeTheNextCommit: once a checkpoint copied the
// whole WAL and the writer is idle, the checkpointer starts the log over
// itself, so that the next commit (a request's, on an idle server)
// appends to the log instead of starting it over and syncing its header.
// With the log's start left to the next commit (noLogStart), that
// commit changes the header's salts; here it must not.
func TestLogStartsOverBeforeTheNextCommit(t *testing.T) {
	for _, leave := range []bool{false, true} {
		db, waits := dbWithCheckpointWaits(t)
		db.noLogStart = leave
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		in := DiscloseInput{Owner: "u", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}}
		hang := time.After(2 * time.Minute) // a hang guard, never a bound
		runs := int64(0)
		// Commit, then let every wait end until a checkpoint that copied
		// the whole log ran after the last commit.
		if _, err := db.Disclose(ctx, in); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case c := <-waits:
				c <- time.Time{}
			case <-hang:
				t.Fatal("no checkpoint after the commit")
			}
			for runs == db.checkpoints.Load() {
				select {
				case <-hang:
					t.Fatal("the checkpoint never ended")
				case <-time.After(time.Millisecond):
				}
			}
			runs = db.checkpoints.Load()
			if len(db.committed) == 0 && len(waits) == 0 {
				break
			}
		}
		if !leave && db.logStarts.Load() == 0 {
			t.Fatal("the log was not started over after a full checkpoint")
		}
		before := walSalts(t, db)
		if _, err := db.Disclose(ctx, in); err != nil {
			t.Fatal(err)
		}
		after := walSalts(t, db)
		if restarted := !bytes.Equal(before, after); restarted != leave {
			t.Errorf("noLogStart %v: the next commit started the log over: %v", leave, restarted)
		}
		db.Close()
	}
}
