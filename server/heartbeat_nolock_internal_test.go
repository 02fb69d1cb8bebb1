package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// A registered worker's heartbeat that waits for the store's writer (held
// here by a disclose's chunk, through a store hook: no clock involved)
// does not hold the server's lock meanwhile: dispatch, reports and API
// calls need not wait behind it.
func TestHeartbeatWaitsForWriterWithoutLock(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx

	free, done := holdDiscloseChunk(t, w)

	var calls, lockFree atomic.Int32
	reached := make(chan struct{})
	s.heartbeatWriteFunc = func() {
		defer func() {
			if calls.Add(1) == 1 {
				close(reached)
			}
		}()
		// Tries, not a wait: another goroutine (the worker's stream) may
		// hold the lock for a moment; a heartbeat holding it never lets go.
		for range 10_000 {
			if s.mu.TryLock() {
				lockFree.Add(1)
				s.mu.Unlock()
				return
			}
			runtime.Gosched()
		}
	}
	beat := &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: 0.5, CpuSeconds: 1}}}
	heartbeatAnswered(t, ctx, lt, beat, free, "the heartbeat waited for the writer, held by a disclose's chunk")
	waitFor(t, reached, "the heartbeat's write was never reached")
	if n := s.dm.heartbeatsDeferred.Load(); n != 1 {
		t.Errorf("%d heartbeats deferred, want 1", n)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	heartbeatWritesDone(t, s, "w")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the heartbeat's write was reached %d times, want 1", n)
	}
	if lockFree.Load() != 1 {
		t.Error("the heartbeat held the server's lock while it waited for the store's writer")
	}
}

// A heartbeat's progress, written before its copy's end and handed to
// the scheduler after the end was heard (the lock was busy when the
// heartbeat was answered), does not bring the ended copy back: the end
// stands in the store and in the scheduler.
func TestHeartbeatProgressAppliedAfterEnd(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx

	applying, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free()
	var first sync.Once
	s.heartbeatApplyFunc = func() {
		first.Do(func() {
			close(applying)
			select {
			case <-release:
			case <-time.After(3 * time.Minute): // a hang guard only
			}
		})
	}
	beat := &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: 0.5, CpuSeconds: 1}}}
	s.mu.Lock() // its findings wait for the lock
	heartbeatAnswered(t, ctx, lt, beat, func() { s.mu.Unlock(); free() }, "the heartbeat waited for the lock")
	// On a busy machine the answer can come before the heartbeat's write
	// (deferred); the lock stays taken until that write has found it
	// taken and queued its findings, or they would be applied at once,
	// without the queue this test holds.
	select {
	case <-applying:
	case <-time.After(time.Minute): // a hang guard only
		s.mu.Unlock()
		t.Fatal("what the heartbeat found was never handed to the scheduler")
	}
	s.mu.Unlock()

	// The copy's end, written and heard while the heartbeat's progress
	// waits to be applied.
	rep, err := lt.ReportFinished(ctx, &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: w.copy, RunSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.GetOutcome() != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("outcome %v, want WON", rep.GetOutcome())
	}
	free()
	heartbeatsApplied(t, s)

	if n := phaseCount(t, s, phaseApply); n != 1 {
		t.Errorf("batchd_heartbeat_phase_seconds{phase=apply} counts %d, want 1", n)
	}
	s.mu.Lock()
	live := s.sched.LiveCopies(sched.TaskRef{Set: w.set, Index: 0}, seconds(s.now()))
	s.mu.Unlock()
	if len(live) != 0 {
		t.Errorf("the scheduler holds %v after the copy's end", live)
	}
	_, tasks, err := s.db.GetTasks(ctx, "ann", w.set, []int32{0})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("get the task: %v", err)
	}
	if tasks[0].State != sched.TaskFinished {
		t.Errorf("task state %q after its copy's end, want %q", tasks[0].State, sched.TaskFinished)
	}
}

// heartbeatsApplied waits until what answered heartbeats found has been
// handed to the scheduler (applyHeartbeats has drained its queue).
func heartbeatsApplied(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		if !s.heartbeatQ.busy() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("answered heartbeats were never applied")
		}
		time.Sleep(time.Millisecond)
	}
}
