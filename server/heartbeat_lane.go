package server

import (
	"context"
	"sync/atomic"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// heartbeatWait bounds how long a registered worker's heartbeat waits,
// for the server's lock and then the store's writer together. A
// heartbeat renews a lease: one that waited behind a long API write (a
// 200,000-task disclose stores for seconds, under the lock or in the
// writer's chunks) let the worker's lease lapse although it was alive and
// talking. A heartbeat that does not get both in time is still heard
// (heardAt) and answered with the lease; what else it carries (progress,
// copies the server no longer wants) waits for the next one.
const heartbeatWait = 50 * time.Millisecond

// heardAt returns the cell holding when (unix nanoseconds, the server's
// clock) a registered worker was last heard, which a heartbeat sets
// without the lock; ok is false for a worker not registered.
func (s *Server) heardAt(id sched.WorkerID) (cell *atomic.Int64, ok bool) {
	v, ok := s.heard.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*atomic.Int64), true
}

// lastHeard is when w was last heard: its last heartbeat's arrival, or
// what the lock's holders recorded. Call with mu held.
func (s *Server) lastHeard(w *workerConn) time.Time {
	last := w.lastSeen
	if cell, ok := s.heardAt(w.id); ok {
		if at := time.Unix(0, cell.Load()); at.After(last) {
			last = at
		}
	}
	return last
}

// lockWithin takes mu if it comes within d, and says whether it did. It
// tries now and then rather than queue, so it never holds up whoever
// takes mu next.
func (s *Server) lockWithin(d time.Duration) bool {
	if s.mu.TryLock() {
		return true
	}
	deadline := time.Now().Add(d)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 2*time.Millisecond) {
		time.Sleep(wait)
		if s.mu.TryLock() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// heartbeatUnlocked answers a registered worker's heartbeat that could
// not get the lock within heartbeatWait: it was heard (cell), and its
// lease is renewed.
func (s *Server) heartbeatUnlocked() *batchv1.HeartbeatResponse {
	s.dm.heartbeatsUnlocked.Add(1)
	return &batchv1.HeartbeatResponse{LeaseSeconds: s.cfg.Lease.Seconds()}
}

// heartbeatWrite records a heartbeat in the store. A heard worker's
// heartbeat (one already registered) waits for the store's writer only
// for what is left of heartbeatWait after the wait for the lock: the
// writer may be busy with a large disclose's chunks, one after another,
// and a heartbeat queued behind them all waited for seconds. When the
// writer is not free in time the heartbeat writes nothing
// (hb.Deferred): its lease is renewed all the same (heardAt), and its
// copies' progress, which every heartbeat carries in full, goes in with
// the next one. Call with mu held.
func (s *Server) heartbeatWrite(ctx context.Context, start time.Time, heard bool, id sched.WorkerID, in []store.CopyProgress) (store.HeartbeatResult, error) {
	if !heard {
		return s.db.Heartbeat(ctx, id, in)
	}
	called := time.Now()
	hb, err := s.db.HeartbeatWithin(ctx, max(heartbeatWait-called.Sub(start), 0), id, in)
	s.dm.observeHeartbeatPhase(phaseWriter, hb.WriterWait)
	if err == nil && !hb.Deferred {
		s.dm.observeHeartbeatPhase(phaseWrite, time.Since(called)-hb.WriterWait)
	}
	return hb, err
}

// heartbeatDeferred answers a heartbeat that got the lock but not the
// store's writer within heartbeatWait: heard, its lease renewed, its
// progress left to the next.
func (s *Server) heartbeatDeferred() *batchv1.HeartbeatResponse {
	s.dm.heartbeatsDeferred.Add(1)
	return &batchv1.HeartbeatResponse{LeaseSeconds: s.cfg.Lease.Seconds()}
}
