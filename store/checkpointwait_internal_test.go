package store

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
)

// TestCheckpointWaitsAfterACommit: the checkpointer waits before it
// copies a commit's pages, not after, so that the checkpoint a request's
// commit wakes on an idle server does not run beside the decision and
// the fork that follow it (nor start the log over under the decision's
// commit). The wait is the test's: no clock is read.
func TestCheckpointWaitsAfterACommit(t *testing.T) {
	db, waits := dbWithCheckpointWaits(t)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	go func() {
		_, _ = db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	}()
	hang := time.After(2 * time.Minute) // a hang guard, never a bound
	var fire chan time.Time
	select {
	case fire = <-waits:
	case <-hang:
		t.Fatal("the checkpointer never waited after a commit")
	}
	if runs, _, _, _ := db.CheckpointStats(); runs != 0 {
		t.Fatalf("%d checkpoints ran before the wait after the commit ended", runs)
	}
	fire <- time.Time{}
	for {
		if runs, _, _, _ := db.CheckpointStats(); runs == 1 {
			break
		}
		select {
		case <-hang:
			t.Fatal("no checkpoint after the wait")
		case <-time.After(time.Millisecond):
		}
	}
	// The next commit's checkpoint waits again.
	go func() {
		_, _ = db.Disclose(ctx, DiscloseInput{Owner: "u", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}}})
	}()
	select {
	case fire = <-waits:
	case <-hang:
		t.Fatal("the checkpointer never waited after the second commit")
	}
	if runs, _, _, _ := db.CheckpointStats(); runs != 1 {
		t.Fatalf("%d checkpoints before the second wait ended, want 1", runs)
	}
	close(fire)
}

// dbWithCheckpointWaits is a database (not yet open) whose checkpointer's
// waits are the test's: each wait's channel comes out of waits, and the
// wait ends when the test sends on it.
func dbWithCheckpointWaits(t *testing.T) (*DB, chan chan time.Time) {
	db := NewDB(t.TempDir() + "/batchd.db")
	waits := make(chan chan time.Time, 16) // never blocks the checkpointer
	db.checkpointAfter = func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		waits <- c
		return c
	}
	return db, waits
}
