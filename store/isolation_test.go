package store_test

import (
	"context"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// A worker's isolation, bound user and limits are kept, listed, loaded
// for the scheduler's rebuild and traced for replay.
func TestWorkerIsolationKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	for _, in := range []store.RegisterInput{
		{Worker: "a", Slots: 1, Isolation: sched.IsolationNamespaces, Limits: "pids (rlimit)"},
		{Worker: "b", Slots: 1, BoundUser: "bob"},
	} {
		if _, err := db.RegisterWorker(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := db.ListWorkers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := db.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := db.ExportTrace(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Workers) != 2 || tr.Workers[0].BoundUser != "" || tr.Workers[1].BoundUser != "bob" {
		t.Fatalf("trace workers: %+v", tr.Workers)
	}
	for _, got := range [][]sched.Worker{ws, snap.Workers} {
		if len(got) != 2 || got[0].Isolation != "namespaces" || got[0].Limits != "pids (rlimit)" || got[0].BoundUser != "" ||
			got[1].Isolation != "none" || got[1].BoundUser != "bob" {
			t.Fatalf("workers: %+v", got)
		}
	}
}
