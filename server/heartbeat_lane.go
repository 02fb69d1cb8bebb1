// The heartbeat lane: a registered worker's heartbeat never waits for
// the server's lock, and waits for the store's writer only briefly.
//
// A heartbeat renews a lease. One that waited behind a long API write (a
// 200,000-task disclose stores for seconds, in the writer's chunks, and
// whoever holds the lock meanwhile may be waiting for the writer too)
// let a worker's lease lapse although it was alive and talking; and one
// that held the lock while it waited for the writer held up dispatch,
// reports and API calls behind it. So a registered worker's heartbeat:
//
//  1. is heard at once (heardAt): its lease is renewed;
//  2. has its copies' progress written in the background, without the
//     lock, and waits for that write at most heartbeatWait
//     (heartbeat_write.go): a write that comes later (deferred) still
//     writes, and the newest heartbeat waiting replaces older ones;
//  3. is answered: the copies the server no longer wants are killed
//     (those its write found, or, when deferred, those earlier writes
//     found after their answers);
//  4. its write hands what it found to the scheduler (changed
//     progress, copies the worker did not report) under the lock if it
//     is free at once, else leaves it to applyHeartbeats, which takes
//     the lock later.
//
// Order: a copy's end is written and heard under the lock, and the
// store writes a heartbeat's progress only for a copy live at that
// write. A heartbeat's progress written before an end may be applied
// after it; the scheduler holds no ended copy and ignores an event
// about one (sched.Scheduler.Apply), so the end stands.

package server

import (
	"context"
	"sync/atomic"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

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

// heartbeatAnswer is the answer to a heartbeat the store recorded: the
// lease, and the copies to kill.
func (s *Server) heartbeatAnswer(hb store.HeartbeatResult) *batchv1.HeartbeatResponse {
	out := &batchv1.HeartbeatResponse{LeaseSeconds: s.cfg.Lease.Seconds()}
	for _, k := range hb.Kill {
		out.Kill = append(out.Kill, int64(k))
	}
	return out
}

// heartbeatFound is what an answered heartbeat found, for the scheduler.
type heartbeatFound struct {
	worker sched.WorkerID
	at     time.Time // when it was heard (the server's clock)
	hb     store.HeartbeatResult
	queued time.Time
}

// hearFound hands what an answered heartbeat found to the
// scheduler: at once when the lock is free and no earlier heartbeat's
// findings wait for it, else after the ones waiting (applyHeartbeats).
func (s *Server) hearFound(f *heartbeatFound) {
	if s.mu.TryLock() {
		if !s.heartbeatQ.busy() {
			defer s.mu.Unlock()
			got := time.Now()
			defer s.lm.observeLockHeld(got)
			s.applyFound(got, []*heartbeatFound{f})
			return
		}
		s.mu.Unlock()
	}
	s.heartbeatQ.add(f, s.applyHeartbeats)
}

// applyHeartbeats takes the lock once for answered heartbeats whose
// findings waited for it, and applies them in their order.
func (s *Server) applyHeartbeats(batch []*heartbeatFound) {
	if f := s.heartbeatApplyFunc; f != nil {
		f()
	}
	s.lockWorker()
	defer s.mu.Unlock()
	got := time.Now()
	defer s.lm.observeLockHeld(got)
	select {
	case <-s.done:
		return // closed: the store may be too
	default:
	}
	s.applyFound(got, batch)
}

// applyFound hands the scheduler what each heartbeat of batch found,
// in order, with mu taken at got. A worker dropped since (its lease
// lapsed, or it left) is skipped: its copies were lost with it. Call
// with mu held.
func (s *Server) applyFound(got time.Time, batch []*heartbeatFound) {
	for _, f := range batch {
		s.dm.observeHeartbeatPhase(phaseApply, got.Sub(f.queued))
		w := s.workers[f.worker]
		if w == nil {
			continue
		}
		if err := s.heartbeatResults(context.Background(), f.at, w, f.hb); err != nil {
			s.log.Error("apply a heartbeat", "worker", f.worker, "err", err.Error())
		}
	}
}

// heartbeatResults hands the scheduler what a heartbeat of w, heard at
// at, found: its copies' changed progress, and the copies the server
// holds as live that the worker has left out of its heartbeats for
// longer than a lease (counted in the heartbeats' arrival times). Those
// never reached it (an assignment lost with a broken stream) or ended
// without a report: they are lost and run again. A copy whose end's
// report is being handled (s.reporting) is not missing: a worker leaves
// an ended copy out of its heartbeats, and its report may wait for the
// store's writer longer than a lease while heartbeats are written
// beside it. Call with mu held.
func (s *Server) heartbeatResults(ctx context.Context, at time.Time, w *workerConn, hb store.HeartbeatResult) error {
	now := s.now()
	for _, c := range hb.Changed {
		s.apply(sched.Event{Kind: sched.EventCopyProgress, Time: seconds(now), Copy: c.Copy, Progress: c.Progress})
	}
	missing := make(map[sched.CopyID]time.Time, len(hb.Missing))
	var lose []sched.CopyID
	for _, c := range hb.Missing {
		if _, ending := s.reporting.Load(c); ending {
			continue // its end is being written: left out, not missing
		}
		since, ok := w.missingSince[c]
		if !ok {
			since = at
		}
		missing[c] = since
		if at.Sub(since) > s.cfg.Lease+s.cfg.LeaseMargin {
			lose = append(lose, c)
		}
	}
	w.missingSince = missing
	if len(lose) == 0 {
		return nil
	}
	lost, err := s.db.LoseCopies(ctx, w.id, lose)
	if err != nil {
		return err
	}
	for _, c := range lost {
		s.log.Warn("copy not reported by its worker for a lease: lost", "copy", c.ID, "worker", w.id)
		s.apply(sched.Event{Kind: sched.EventCopyLost, Time: seconds(now), Copy: c.ID})
		s.metrics.addFree(sched.FreeLostWithWorker, now.Sub(c.StartedAt).Seconds())
		s.watch.publish(c.Task.Set, []int32{c.Task.Index})
	}
	s.hearPilotFailures(now, lost)
	s.decide(now)
	return nil
}
