package store

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"batchd/sched"
)

// TestBillTotalsOneCrossing checks that a group commit's bill totals
// (four bill_days rows for one set's lines) bind their 36 values in the
// statement's step, not in a cgo call each: their write crosses into C a
// few times, whatever the number of values.
func TestBillTotalsOneCrossing(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := NewDB(filepath.Join(t.TempDir(), "batchd.db"))
	db.Now = func() time.Time { return now }
	// No checkpoint beside the count: its cgo calls would count.
	db.checkpointAfter = func(time.Duration) <-chan time.Time { return nil }
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	line := sched.BillLine{Kind: sched.BillKindCharge, Owner: "ann", Task: sched.TaskRef{Set: 1}, SetName: "s", SlotSeconds: 1,
		CPUSeconds: 0.5, Amount: 2, BilledAt: now, Reason: sched.BillFinished}
	var crossings []int64
	for i := 0; i < 3; i++ { // the first prepares the statement
		if err := db.write(ctx, func(tx *Tx) error {
			var d billDays
			d.add(line)
			before := runtime.NumCgoCall()
			err := d.write(ctx, tx)
			crossings = append(crossings, runtime.NumCgoCall()-before)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got, most := crossings[2], int64(4); got > most {
		t.Errorf("bill totals' write: %d cgo calls (all: %v), want at most %d", got, crossings, most)
	}
	var lines int64
	if err := db.ro.QueryRowContext(ctx, `SELECT lines FROM bill_days WHERE owner = 'ann' AND set_id = 0 AND day = -1`).Scan(&lines); err != nil {
		t.Fatal(err)
	}
	if lines != 3 {
		t.Errorf("all-time lines: %d, want 3", lines)
	}
}
