package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"batchd/sched"
	"batchd/store"
)

// While the server's lock is held elsewhere (a slow write, here held by
// the test), forty 1,000-task discloses queue in the API lane. Once it is
// free, the lane carries them out in batches of at most maxAPIBatchWork
// tasks, each batch one hold of the lock: a heartbeat or a report waits
// behind one such batch, not behind all forty discloses at once.
func TestAPIBatchBoundedByWork(t *testing.T) {
	t.Parallel()
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1, RequestRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var batches [][]int // the work of each batch's writes
	s.apiBatchSeen = func(b []*apiOp) {
		w := make([]int, len(b))
		for i, op := range b {
			w[i] = op.work
		}
		batches = append(batches, w)
	}
	ctx := context.WithValue(context.Background(), callerKey{}, Caller{Name: "u", Role: store.RoleUser})
	specs := func() []sched.TaskSpec {
		sp := make([]sched.TaskSpec, 1000)
		for i := range sp {
			sp[i] = sched.TaskSpec{Argv: []string{"true"}}
		}
		return sp
	}
	const writes = 40
	s.mu.Lock()
	var wg sync.WaitGroup
	for i := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.disclose(ctx, discloseHeader{name: fmt.Sprint("s", i)}, specs(), nil); err != nil {
				t.Error(err)
			}
		}()
	}
	// Some writes are taken (their batch waits for the lock); the rest queue.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.apiQ.mu.Lock()
		n := s.apiQ.added
		s.apiQ.mu.Unlock()
		if n == writes {
			break
		}
		if time.Now().After(deadline) {
			s.mu.Unlock()
			t.Fatalf("%d writes queued, want %d", n, writes)
		}
	}
	s.mu.Unlock()
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, b := range batches {
		sum := 0
		for _, w := range b {
			sum += w
		}
		total += sum
		if len(b) > 1 && sum > maxAPIBatchWork {
			t.Errorf("one hold of the lock carried out %d writes of %d tasks in all, past the bound of %d", len(b), sum, maxAPIBatchWork)
		}
	}
	if total != writes*1000 {
		t.Errorf("batches carried %d tasks, want %d", total, writes*1000)
	}
	if st := s.sched.Stats(); st.QueuedDisclosed != writes*1000 {
		t.Errorf("the scheduler queues %d tasks, want %d", st.QueuedDisclosed, writes*1000)
	}
	t.Logf("%d batches", len(batches))
}

// Writes past the work bound go alone, and the small writes queued
// behind several of them wait for one, not for all: with the lane busy,
// three big writes and two small ones queue; the small ones go right
// after the first big one, together, then the other big ones in turn.
func TestGroupSmallWritesPassBigOnes(t *testing.T) {
	t.Parallel()
	g := group[int]{max: 128, maxWork: 10, work: func(w int) int { return w }}
	var (
		mu      sync.Mutex
		batches [][]int
	)
	busy, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	drain := func(b []int) {
		mu.Lock()
		batches = append(batches, b)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(busy)
			<-release
		}
		if b[len(b)-1] == 30 {
			close(done)
		}
	}
	g.add(1, drain) // the write the lane is busy with
	<-busy
	for _, w := range []int{100, 200, 2, 3, 30} {
		g.add(w, drain)
	}
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	got := fmt.Sprint(batches)
	if want := "[[1] [100] [2 3] [200] [30]]"; got != want {
		t.Errorf("batches %s, want %s", got, want)
	}
}
