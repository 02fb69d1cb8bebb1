package server

import (
	"database/sql"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// heldWrite holds a server's first heartbeat write inside its
// transaction, holding the store's writer (a store hook, as a slow
// commit, a checkpoint or the disk would hold it; no clock involved),
// and records the progress every heartbeat write carried.
type heldWrite struct {
	held    chan struct{} // closed once the first write is held
	release func()        // lets it go (any number of times)
	mu      sync.Mutex
	writes  [][]float64 // each write's copies' progress, in order
}

func holdHeartbeatWrite(t *testing.T, s *Server) *heldWrite {
	t.Helper()
	h := &heldWrite{held: make(chan struct{})}
	free := make(chan struct{})
	var once sync.Once
	h.release = func() { once.Do(func() { close(free) }) }
	t.Cleanup(h.release)
	s.db.HeartbeatHeldFunc = func(_ sched.WorkerID, copies []store.CopyProgress) {
		h.mu.Lock()
		var ps []float64
		for _, c := range copies {
			ps = append(ps, c.Progress)
		}
		h.writes = append(h.writes, ps)
		first := len(h.writes) == 1
		h.mu.Unlock()
		if !first {
			return
		}
		close(h.held)
		select {
		case <-free:
		case <-time.After(3 * time.Minute): // a hang guard only
		}
	}
	return h
}

// wait waits for c, failing the test with what at the hang guard.
func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal(what)
	}
}

// heartbeatWritesDone waits until worker id's heartbeat writes have all
// run and what they found has been handed to the scheduler.
func heartbeatWritesDone(t *testing.T, s *Server, id sched.WorkerID) {
	t.Helper()
	hw := s.heartbeatWriterOf(id)
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for !hw.idle() {
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat writes never ended")
		}
		time.Sleep(time.Millisecond)
	}
	heartbeatsApplied(t, s)
}

// taskProgress is w's task's progress in the store.
func taskProgress(t *testing.T, w workerRunningOne) float64 {
	t.Helper()
	_, tasks, err := w.s.db.GetTasks(w.ctx, "ann", w.set, []int32{0})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("get the task: %v", err)
	}
	return tasks[0].Progress
}

// copyProgress is copy id's progress in the store, read from the file.
func copyProgress(t *testing.T, s *Server, id int64) float64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+s.db.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p float64
	if err := db.QueryRow(`SELECT progress FROM copies WHERE id = ?`, id).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A heartbeat whose own write is slow once it has the store's writer
// (held inside its transaction) is answered without waiting for it; the
// write still lands, with no further heartbeat, and the copies it found
// to kill go with the worker's next answer. A heartbeat that waited for
// its write waited as long as the write.
func TestHeartbeatAnsweredBeforeASlowWrite(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx
	const stray = 424242 // not a copy of this worker: to be killed
	h := holdHeartbeatWrite(t, s)
	beat := &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{
		{CopyId: w.copy, Progress: 0.5, CpuSeconds: 1}, {CopyId: stray, Progress: 0.1}}}
	heartbeatAnswered(t, ctx, lt, beat, h.release, "the heartbeat waited for its own write")
	waitFor(t, h.held, "the heartbeat was never written")
	if n := s.dm.heartbeatsDeferred.Load(); n != 1 {
		t.Errorf("%d heartbeats deferred, want 1", n)
	}
	if p := taskProgress(t, w); p == 0.5 {
		t.Errorf("progress %g recorded while the write was held", p)
	}
	h.release()
	heartbeatWritesDone(t, s, "w")
	if p := taskProgress(t, w); p != 0.5 {
		t.Errorf("progress %g once the held write ended, want 0.5", p)
	}

	// The next answer, which waits for its write here, carries the kill
	// the held write found after its answer, once.
	s.cfg.HeartbeatWait = time.Minute
	res, err := lt.Heartbeat(ctx, &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: 0.6}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.GetKill(), []int64{stray}) {
		t.Errorf("kill %v, want [%d]", res.GetKill(), stray)
	}
	heartbeatWritesDone(t, s, "w")
	if p := taskProgress(t, w); p != 0.6 {
		t.Errorf("progress %g, want 0.6", p)
	}
	if n := s.dm.heartbeatsDeferred.Load(); n != 1 {
		t.Errorf("%d heartbeats deferred, want 1", n)
	}
}

// Heartbeats that come while their worker's write is held are answered
// at once; only the newest of them is written once the write ends: one
// write runs and one waits per worker, the newest progress wins.
func TestHeartbeatWritesCoalesce(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx
	h := holdHeartbeatWrite(t, s)
	beat := func(p float64) *batchv1.HeartbeatRequest {
		return &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: p, CpuSeconds: p}}}
	}
	heartbeatAnswered(t, ctx, lt, beat(0.1), h.release, "the heartbeat waited for its own write")
	waitFor(t, h.held, "the heartbeat was never written")
	heartbeatAnswered(t, ctx, lt, beat(0.2), h.release, "a heartbeat waited for its worker's earlier write")
	heartbeatAnswered(t, ctx, lt, beat(0.3), h.release, "a heartbeat waited for its worker's earlier write")
	if n := s.dm.heartbeatsCoalesced.Load(); n != 1 {
		t.Errorf("%d heartbeats coalesced, want 1", n)
	}
	h.release()
	heartbeatWritesDone(t, s, "w")
	h.mu.Lock()
	writes := h.writes
	h.mu.Unlock()
	if want := [][]float64{{0.1}, {0.3}}; !slices.EqualFunc(writes, want, slices.Equal) {
		t.Errorf("heartbeat writes carried %v, want %v", writes, want)
	}
	if p := taskProgress(t, w); p != 0.3 {
		t.Errorf("progress %g, want 0.3", p)
	}
	if n := s.dm.heartbeatsDeferred.Load(); n != 3 {
		t.Errorf("%d heartbeats deferred, want 3", n)
	}
}

// A heartbeat's write that waited while its copy's end was written
// records no progress: the end stands in the store and in the
// scheduler.
func TestHeartbeatWriteAfterEndKeepsTheEnd(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx
	h := holdHeartbeatWrite(t, s)
	ended := make(chan struct{})
	var calls atomic.Int32
	s.heartbeatWriteFunc = func() {
		if calls.Add(1) == 2 { // the waiting heartbeat's write: after the end
			waitFor(t, ended, "the copy's end was never written")
		}
	}
	beat := func(p float64) *batchv1.HeartbeatRequest {
		return &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: p, CpuSeconds: p}}}
	}
	heartbeatAnswered(t, ctx, lt, beat(0.1), h.release, "the heartbeat waited for its own write")
	waitFor(t, h.held, "the heartbeat was never written")
	heartbeatAnswered(t, ctx, lt, beat(0.7), h.release, "a heartbeat waited for its worker's earlier write")

	reported := make(chan error, 1)
	go func() {
		rep, err := lt.ReportFinished(ctx, &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: w.copy, RunSeconds: 1})
		if err == nil && rep.GetOutcome() != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
			t.Errorf("outcome %v, want WON", rep.GetOutcome())
		}
		reported <- err
		close(ended)
	}()
	h.release()
	if err := <-reported; err != nil {
		t.Fatal(err)
	}
	heartbeatWritesDone(t, s, "w")

	h.mu.Lock()
	writes := h.writes
	h.mu.Unlock()
	if want := [][]float64{{0.1}, {0.7}}; !slices.EqualFunc(writes, want, slices.Equal) {
		t.Fatalf("heartbeat writes carried %v, want %v", writes, want)
	}
	_, tasks, err := s.db.GetTasks(ctx, "ann", w.set, []int32{0})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("get the task: %v", err)
	}
	if tasks[0].State != sched.TaskFinished {
		t.Errorf("task state %q after its copy's end, want %q", tasks[0].State, sched.TaskFinished)
	}
	if p := copyProgress(t, s, w.copy); p != 0.1 {
		t.Errorf("the ended copy's progress is %g, want 0.1 (the last written before its end)", p)
	}
	s.mu.Lock()
	live := s.sched.LiveCopies(sched.TaskRef{Set: w.set, Index: 0}, seconds(s.now()))
	s.mu.Unlock()
	if len(live) != 0 {
		t.Errorf("the scheduler holds %v after the copy's end", live)
	}
}

// A heartbeat written after a copy started, though heard before, does
// not count the copy missing: it could not have carried it.
func TestHeartbeatHeardBeforeAStartMissesNothing(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, ctx := w.s, w.ctx
	before := time.Unix(0, 1)
	hb, err := s.db.HeartbeatWrite(ctx, "w", before, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hb.Missing) != 0 {
		t.Errorf("a heartbeat heard before the copy started misses %v", hb.Missing)
	}
	hb, err = s.db.HeartbeatWrite(ctx, "w", s.now(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hb.Missing, []sched.CopyID{sched.CopyID(w.copy)}) {
		t.Errorf("a heartbeat heard after the copy started misses %v, want [%d]", hb.Missing, w.copy)
	}
}

// A copy whose end's report is being handled (ReportFinished marks it;
// a report may wait for the store's writer, behind a disclose's chunks,
// for longer than a lease) is not lost by heartbeats that leave it out
// for longer than a lease meanwhile; once its report is done, it is.
func TestHeartbeatsBesideAReportLoseNothing(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, ctx := w.s, w.ctx
	c := sched.CopyID(w.copy)
	beats := func() {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		at := s.now()
		for _, at := range []time.Time{at, at.Add(s.cfg.Lease + s.cfg.LeaseMargin + time.Second)} {
			if err := s.heartbeatResults(ctx, at, s.workers["w"], store.HeartbeatResult{Missing: []sched.CopyID{c}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	live := func() bool {
		t.Helper()
		db, err := sql.Open("sqlite3", "file:"+s.db.Path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var state string
		if err := db.QueryRow(`SELECT state FROM copies WHERE id = ?`, c).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return sched.CopyState(state).Live()
	}
	s.reporting.Store(c, struct{}{})
	beats()
	if !live() {
		t.Fatal("a copy whose report was being handled was lost")
	}
	s.reporting.Delete(c)
	beats()
	if live() {
		t.Error("a copy left out of heartbeats for longer than a lease, with no report, was not lost")
	}
}
