package store_test

import (
	"context"
	"database/sql"
	"math"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// The per-set counts, billed sum and mean response that GetTaskSet reads
// from the set's row (kept by triggers) agree with a recount of the tasks
// and the ledger after every kind of change: disclose, append, request
// (of disclosed and of executed tasks), a copy's win while disclosed and
// while requested, cancel by index and of the rest.
func TestSetCountsMatchTasks(t *testing.T) {
	db, now := setup(t)
	ctx := context.Background()
	if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(10)})
	if err != nil {
		t.Fatal(err)
	}
	set := res.Set.ID
	if _, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", SetID: set, Tasks: echo(4), Request: true}); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		got, err := db.GetTaskSet(ctx, "u", set)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := sql.Open("sqlite3", db.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		want := sched.TaskCounts{}
		rows, err := raw.Query(`SELECT state, COUNT(*) FROM tasks WHERE set_id = ? GROUP BY state`, set)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var st string
			var n int64
			rows.Scan(&st, &n)
			want.Total += n
			switch sched.TaskState(st) {
			case sched.TaskDisclosed:
				want.Disclosed = n
			case sched.TaskExecuted:
				want.Executed = n
			case sched.TaskRequested:
				want.Requested = n
			case sched.TaskFinished:
				want.Finished = n
			case sched.TaskCanceled:
				want.Canceled = n
			}
		}
		rows.Close()
		var billed, mean float64
		raw.QueryRow(`SELECT COALESCE(SUM(slot_seconds), 0) FROM bill_lines WHERE set_id = ?`, set).Scan(&billed)
		raw.QueryRow(`SELECT COALESCE(AVG(visible_response), 0) FROM tasks WHERE set_id = ? AND state = 'finished'`, set).Scan(&mean)
		want.Running = got.Counts.Running
		if got.Counts != want {
			t.Errorf("%s: counts %+v, recount %+v", step, got.Counts, want)
		}
		if math.Abs(got.BilledSlotSeconds-billed) > 1e-9 || math.Abs(got.MeanVisibleResponseSeconds-mean) > 1e-9 {
			t.Errorf("%s: billed %v, mean response %v; recount %v, %v", step, got.BilledSlotSeconds, got.MeanVisibleResponseSeconds, billed, mean)
		}
	}
	check("disclosed and appended")
	// Copies of tasks 0 (disclosed), 10 and 11 (requested) win.
	var ds []sched.Decision
	for i, idx := range []int32{0, 10, 11} {
		ds = append(ds, sched.Decision{Kind: sched.DecisionStart, Copy: sched.CopyID(i + 1), Task: sched.TaskRef{Set: set, Index: idx},
			Slot: sched.SlotRef{Worker: "w", Slot: int32(i)}})
	}
	if _, err := db.ApplyDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	check("running")
	*now = now.Add(3e9)
	var ins []store.FinishInput
	for i := range ds {
		ins = append(ins, store.FinishInput{Worker: "w", Copy: sched.CopyID(i + 1), RunSeconds: 2, CPUSeconds: 1})
	}
	if _, err := db.FinishCopies(ctx, ins); err != nil {
		t.Fatal(err)
	}
	check("finished and executed")
	*now = now.Add(5e9)
	if _, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: set, Indexes: []int32{0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	check("requested, one executed")
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, Indexes: []int32{3}}); err != nil {
		t.Fatal(err)
	}
	check("canceled by index")
	if _, err := db.Cancel(ctx, store.CancelInput{Owner: "u", SetID: set, All: true}); err != nil {
		t.Fatal(err)
	}
	check("canceled the rest")
}
