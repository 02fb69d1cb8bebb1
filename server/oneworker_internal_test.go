package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// workerRunningOne is a server (no tick, the given lease, stageRows tasks
// a disclose chunk) with one registered one-slot worker "w" whose
// assignment stream has started user ann's one requested `true` task.
type workerRunningOne struct {
	s    *Server
	lt   wire.Transport
	ctx  context.Context // the worker's
	uctx context.Context // ann's
	set  sched.SetID     // the task's
	copy int64           // the started copy's id
}

func newWorkerRunningOne(t *testing.T, lease time.Duration, stageRows int) workerRunningOne {
	t.Helper()
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.db.StageRows = stageRows
	w := workerRunningOne{s: s, lt: s.LocalTransport(), ctx: t.Context()}
	w.uctx = context.WithValue(w.ctx, callerKey{}, Caller{Name: "ann", Role: store.RoleUser})
	if _, err := w.lt.Register(w.ctx, &batchv1.RegisterRequest{Name: "w", Slots: 1, Isolation: "namespaces"}); err != nil {
		t.Fatal(err)
	}
	stream, err := w.lt.Assignments(w.ctx, &batchv1.AssignmentsRequest{WorkerId: "w"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Close() })
	res, err := s.disclose(w.uctx, discloseHeader{request: true}, trueTasks(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.set = res.Set.ID
	for w.copy == 0 && stream.Receive() {
		w.copy = stream.Msg().GetStart().GetCopyId()
	}
	if w.copy == 0 {
		t.Fatalf("no start: %v", stream.Err())
	}
	return w
}

// trueTasks is n `true` tasks.
func trueTasks(n int) []sched.TaskSpec {
	tasks := make([]sched.TaskSpec, n)
	for i := range tasks {
		tasks[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	return tasks
}

// heartbeatAnswered sends beat and fails the test unless it is answered
// with the 3 s lease before the hang guard; onHang frees what the test
// holds before it fails with hung.
func heartbeatAnswered(t *testing.T, ctx context.Context, lt wire.Transport, beat *batchv1.HeartbeatRequest, onHang func(), hung string) {
	t.Helper()
	answered := make(chan error, 1)
	go func() {
		res, err := lt.Heartbeat(ctx, beat)
		if err == nil && res.GetLeaseSeconds() != 3 {
			t.Errorf("lease %g s, want 3", res.GetLeaseSeconds())
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang guard only
		onHang()
		t.Fatal(hung)
	}
}

// holdDiscloseChunk starts a 5-task disclose on w's server and returns
// once its first chunk holds the store's writer (a store hook: no clock).
// release lets it go (any number of times); done gives its result.
func holdDiscloseChunk(t *testing.T, w workerRunningOne) (release func(), done <-chan error) {
	t.Helper()
	held, free := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(free) }) }
	t.Cleanup(release)
	w.s.db.StageChunkHeldFunc = func(_ sched.SetID, chunk int) {
		if chunk != 0 {
			return
		}
		close(held)
		select {
		case <-free:
		case <-time.After(3 * time.Minute): // a hang guard only
		}
	}
	res := make(chan error, 1)
	go func() {
		_, err := w.s.disclose(w.uctx, discloseHeader{name: "big"}, trueTasks(5), nil)
		res <- err
	}()
	<-held
	return release, res
}
