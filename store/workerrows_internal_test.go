package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"batchd/sched"
)

// workersWithGone opens a store with live workers up and gone ones
// registered and then gone (goodbye, lapse), as pilots leave them.
func workersWithGone(t testing.TB, live, gone int) *DB {
	t.Helper()
	db := NewDB(t.TempDir() + "/batchd.db")
	now := time.Unix(1_800_000_000, 0)
	db.Now = func() time.Time { return now }
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range live + gone {
		id := sched.WorkerID(fmt.Sprintf("slurm-%06d", i))
		if _, err := db.RegisterWorker(ctx, RegisterInput{Worker: id, Slots: 4, HandBack: true}); err != nil {
			t.Fatal(err)
		}
		if i >= live {
			if _, err := db.LoseWorker(ctx, id, "gone"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

// The live workers are read through workers_live, never by a scan of
// every worker row: what the pool's round and the cluster view cost does
// not grow with the workers that left.
func TestLiveWorkersUseTheirIndex(t *testing.T) {
	t.Parallel()
	db := workersWithGone(t, 1, 200)
	ctx := context.Background()
	p := queryPlan(t, db, liveWorkersQuery)
	plan := strings.Split(p, "\n")
	t.Logf("plan:\n%s", p)
	for _, line := range plan {
		if strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, "USING INDEX workers_live") {
			t.Errorf("plan of the live workers' query:\n%s\nwant workers_live and copies_live, no other scan", p)
		}
	}
	if !strings.Contains(p, "workers_live") || !strings.Contains(p, "copies_live") {
		t.Errorf("plan of the live workers' query:\n%s\nwant workers_live and copies_live", p)
	}
	ws, err := db.ListWorkers(ctx)
	if err != nil || len(ws) != 1 || ws[0].State != "up" {
		t.Fatalf("ListWorkers = %v, %v; want the one live worker", ws, err)
	}
	all, err := db.ListAllWorkers(ctx)
	if err != nil || len(all) != 201 || all[1].State != "gone" || all[1].LeftAt.IsZero() {
		t.Fatalf("ListAllWorkers: %d workers, %v", len(all), err)
	}
}

// RetireWorkers marks gone the lapsed workers silent since before the
// retention, and only those.
func TestRetireWorkers(t *testing.T) {
	t.Parallel()
	db := workersWithGone(t, 3, 0)
	ctx := context.Background()
	t0 := db.Now()
	if _, err := db.LoseWorker(ctx, "slurm-000000", "lease-lapsed"); err != nil {
		t.Fatal(err)
	}
	db.Now = func() time.Time { return t0.Add(time.Hour) }
	if _, err := db.Heartbeat(ctx, "slurm-000001", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoseWorker(ctx, "slurm-000001", "lease-lapsed"); err != nil {
		t.Fatal(err)
	}
	n, err := db.RetireWorkers(ctx, t0.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("RetireWorkers = %d, %v; want 1", n, err)
	}
	ws, err := db.ListWorkers(ctx)
	if err != nil || len(ws) != 2 || ws[0].ID != "slurm-000001" || ws[0].State != "lease-lapsed" || ws[1].State != "up" {
		t.Fatalf("live after retiring: %+v, %v", ws, err)
	}
}

// BenchmarkListWorkers reads the live workers (as each pool round and the
// cluster view do) beside 10 and 10,000 workers that left.
func BenchmarkListWorkers(b *testing.B) {
	for _, gone := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("gone=%d", gone), func(b *testing.B) {
			db := workersWithGone(b, 4, gone)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if ws, err := db.ListWorkers(ctx); err != nil || len(ws) != 4 {
					b.Fatalf("%d workers, %v", len(ws), err)
				}
			}
		})
	}
}
