package store

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"batchd/sched"
)

// A write that comes while the chunks of several staged discloses queue
// for the writer passes them: it waits for the chunk writing and at most
// the one that passed the gate before it, not for every chunk queued.
// The first chunk holds the writer through a hook, for as long as the
// test likes (no clock involved).
func TestWritePassesQueuedChunks(t *testing.T) {
	t.Parallel()
	db := stageDB(t, filepath.Join(t.TempDir(), "batchd.db"), 2)
	ctx := context.Background()
	const discloses = 4 // one writing, three queued behind it
	staged := make([]*Staged, discloses)
	for i := range staged {
		st, _, err := db.BeginStaged(ctx, DiscloseInput{Owner: "ann", Tasks: stageSpecs(6)})
		if err != nil {
			t.Fatal(err)
		}
		staged[i] = st
	}

	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	held, release := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	db.StageChunkHeldFunc = func(set sched.SetID, chunk int) {
		note(fmt.Sprintf("set %d chunk %d", set, chunk))
		if holding.CompareAndSwap(false, true) {
			close(held)
			select {
			case <-release:
			case <-time.After(3 * time.Minute): // a hang guard only
			}
		}
	}
	waitFor := func(n int64, what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // a hang guard only
		for db.writesWaiting() != n {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("%s: %d writes wait for the writer, want %d", what, db.writesWaiting(), n)
			}
			runtime.Gosched()
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, discloses+1)
	stage := func(st *Staged) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.StageTasks(ctx, st)
		}()
	}
	stage(staged[0])
	<-held
	for _, st := range staged[1:] {
		stage(st)
	}
	waitFor(discloses-1, "the other discloses' first chunks")
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- db.write(ctx, func(*Tx) error { note("the write"); return nil })
	}()
	waitFor(discloses, "the write")
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	at := slices.Index(order, "the write")
	if at < 0 || order[0] != fmt.Sprintf("set %d chunk 0", staged[0].Set()) {
		t.Fatalf("order %q", order)
	}
	// Chunk 0 of the first (writing when the write came), the chunk that
	// had passed the gate, then the write; one more chunk only if the
	// write reached the gate after a chunk queued before it did (in the
	// step between counting a write and its wait at the gate). Without
	// the gate it waits for all three queued chunks.
	if at > 3 {
		t.Errorf("the write went after %d chunks (%q), want at most 3", at, order[:at])
	}
}
