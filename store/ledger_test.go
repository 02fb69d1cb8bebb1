package store_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// Two copies of each task report their finish in the same instant (the
// store's clock is pinned, so both commits carry the same nanosecond), from
// two goroutines: exactly one wins and is charged, at the prices in force.
func TestTwoCopiesFinishSameInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	db.Prices = store.Prices{SlotSecond: 3, CPUSecond: 5}
	const n = 20
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(n), Request: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < n; i++ {
		start(t, db, sched.CopyID(2*i+1), res.Set.ID, i, "a")
		start(t, db, sched.CopyID(2*i+2), res.Set.ID, i, "b")
	}
	*now = now.Add(2 * time.Second) // the reports' 2 s, as the server sees them
	wins := make([]int, n)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		for k, w := range []sched.WorkerID{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := db.FinishCopy(ctx, store.FinishInput{Worker: w, Copy: sched.CopyID(2*i + 1 + k), CPUSeconds: 1, RunSeconds: 2})
				if err != nil {
					t.Error(err)
					return
				}
				if f.Won {
					mu.Lock()
					wins[i]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for i, w := range wins {
		if w != 1 {
			t.Fatalf("task %d: %d winners, want 1", i, w)
		}
	}
	lines, tot, _, err := db.GetBill(ctx, store.BillInput{Owner: "u", IncludeLines: true})
	if err != nil || len(lines) != n || tot.Amount != n*(2*3+1*5) {
		t.Fatalf("bill: %d lines, totals %+v, %v", len(lines), tot, err)
	}
	raw, err := sql.Open("sqlite3", db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var bad int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM bill_lines b JOIN tasks t ON t.set_id = b.set_id AND t.idx = b.idx
		WHERE b.copy_id != t.win_copy OR t.state != 'finished'`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d lines not of their task's winning copy (%v)", bad, err)
	}
}

// A correction is a new line; a second charge of one task is refused by the
// schema whatever the code above it does.
func TestLedgerCorrectionAndOneCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, now := setup(t)
	res, _ := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "s", Tasks: echo(1), Request: true})
	start(t, db, 1, res.Set.ID, 0, "a")
	*now = now.Add(4 * time.Second)
	if _, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 4}); err != nil {
		t.Fatal(err)
	}
	lines, _, _, _ := db.GetBill(ctx, store.BillInput{Owner: "u", IncludeLines: true})
	c, err := db.CorrectBill(ctx, store.CorrectInput{Line: lines[0].ID, SlotSeconds: -1, Note: "clock skew on worker a"})
	if err != nil || c.Kind != sched.BillKindCorrection || c.Corrects != lines[0].ID || c.Owner != "u" || c.SlotSeconds != -1 {
		t.Fatalf("correction: %+v %v", c, err)
	}
	_, tot, _, _ := db.GetBill(ctx, store.BillInput{Owner: "u"})
	if tot.Lines != 2 || tot.BilledSlotSeconds != 3 {
		t.Fatalf("totals after correction: %+v", tot)
	}
	_, err = db.CorrectBill(ctx, store.CorrectInput{Line: 999, SlotSeconds: 1, Note: "x"})
	code(t, err, sched.ENOTFOUND)
	_, err = db.CorrectBill(ctx, store.CorrectInput{Line: lines[0].ID, Note: ""})
	code(t, err, sched.EINVALID)
	raw, err := sql.Open("sqlite3", db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO bill_lines (owner, set_id, idx, slot_seconds, cpu_seconds, billed_at, reason) VALUES ('u', ?, 0, 1, 1, 1, 'finished')`, res.Set.ID); err == nil {
		t.Fatal("a second charge of one task was accepted")
	}
}
