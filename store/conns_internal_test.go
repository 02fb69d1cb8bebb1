package store

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadsHoldAtMostReadConns: many reads at once never run more SQLite
// connections than ReadConns (so never hold more OS threads in SQLite
// calls); the rest wait for the pool. On two processors that is four.
func TestReadsHoldAtMostReadConns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if ReadConns() != 4 {
		t.Fatalf("ReadConns() = %d on 2 processors, want 4", ReadConns())
	}
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	const readers = 16
	var inside, peak atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.read(context.Background(), func(tx *Tx) error {
				n := inside.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-release
				inside.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	// Every reader is either inside a read or waiting for a connection.
	hang := time.Now().Add(time.Minute)
	for inside.Load()+db.ro.Stats().WaitCount < readers {
		if time.Now().After(hang) {
			t.Fatalf("after a minute: %d reads inside, %d waiting", inside.Load(), db.ro.Stats().WaitCount)
		}
		time.Sleep(time.Millisecond)
	}
	got := inside.Load()
	close(release)
	wg.Wait()
	if got != int64(ReadConns()) || peak.Load() != int64(ReadConns()) {
		t.Fatalf("%d reads at once (peak %d), want the pool's %d", got, peak.Load(), ReadConns())
	}
	if open := db.ro.Stats().OpenConnections; open > ReadConns() {
		t.Fatalf("%d reading connections open, want at most %d", open, ReadConns())
	}
}

// TestSQLiteMemoryCounted: SQLite's allocations are counted (its memory
// statistics are on), so the server can export them.
func TestSQLiteMemoryCounted(t *testing.T) {
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inUse, high := SQLiteMemory()
	if inUse <= 0 || high < inUse {
		t.Fatalf("SQLiteMemory() = %d, %d; want in use > 0 and a high-water mark at least that", inUse, high)
	}
	if runtime.GOOS == "linux" && MallocArenas() <= 0 {
		t.Fatalf("MallocArenas() = %d on Linux, want a cap", MallocArenas())
	}
}
