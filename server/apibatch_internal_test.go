package server

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// An API write that panics after it changed the store, before the
// scheduler heard of it, leaves them apart: the batch rebuilds the
// scheduler from the store, so the tasks stored are queued.
func TestAPIBatchPanicResyncs(t *testing.T) {
	t.Parallel()
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	func() {
		defer func() {
			if p := recover(); p != "injected" {
				t.Fatalf("apiWrite raised %v, want the write's panic", p)
			}
		}()
		s.apiWrite(func() {
			in := store.DiscloseInput{Owner: "u", Tasks: []sched.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}}}}
			if _, err := s.db.Disclose(context.Background(), in); err != nil {
				t.Error(err)
			}
			panic("injected")
		})
	}()
	s.mu.Lock()
	st := s.sched.Stats()
	s.mu.Unlock()
	if st.QueuedDisclosed != 2 {
		t.Errorf("the scheduler queues %d disclosed tasks after the panic, want the 2 the store holds", st.QueuedDisclosed)
	}
}
