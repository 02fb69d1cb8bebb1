package server

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"batchd/sched"
)

// This file is pilots' ends, on the server: a pilot registers when it
// stops taking copies (RegisterRequest.ends_at), which the scheduler
// respects, and that it hands copies back (hand_back); a task lost to
// pilot ends Config.PilotLosses times fails (store/pilot.go), and the
// scheduler hears it as a cancel. A pilot's first hand-back stops its
// starts (sched.EventWorkerStopping), and the copies its goodbye shows it
// never started do not count as losses.

// retireEvery is how often the dispatch loop marks gone the workers
// lapsed longer than Config.WorkerRetention.
const retireEvery = time.Minute

// maxPilotEndAhead bounds how far ahead a worker's end may lie.
const maxPilotEndAhead = 10 * 365 * 24 * time.Hour

// workerEnd checks a registering worker's end and returns it (zero when
// unset).
func workerEnd(ts *timestamppb.Timestamp, now time.Time) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, sched.Errorf(sched.EINVALID, "ends_at: %v", err)
	}
	t := ts.AsTime()
	if t.Unix() <= 0 || t.Sub(now) > maxPilotEndAhead {
		return time.Time{}, sched.Errorf(sched.EINVALID, "ends_at %s is not a time within ten years", t.Format(time.RFC3339))
	}
	return t, nil
}

// endSeconds is a worker's end on the scheduler's clock (0: none).
func endSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return seconds(t)
}

// hearPilotFailures tells the scheduler of the tasks among the lost
// copies' that losses to pilot ends failed (canceled in the store), before
// it decides again. Call with mu held.
func (s *Server) hearPilotFailures(now time.Time, lost []sched.Copy) {
	if len(lost) == 0 {
		return
	}
	refs := make([]sched.TaskRef, len(lost))
	for i, c := range lost {
		refs[i] = c.Task
	}
	failed, err := s.db.FailedForPilots(context.Background(), refs)
	if err != nil {
		s.log.Error("read tasks failed by pilot ends", "err", err.Error())
		return
	}
	for _, ref := range failed {
		s.pilotFailed(now, ref)
	}
}

// pilotFailed tells the scheduler that a task lost too often to pilot
// ends is canceled. Call with mu held.
func (s *Server) pilotFailed(now time.Time, ref sched.TaskRef) {
	s.log.Warn("task lost too often to pilot ends: failed", "set", ref.Set, "index", ref.Index)
	s.apply(sched.Event{Kind: sched.EventCanceled, Time: seconds(now), Set: ref.Set, Indexes: []int32{ref.Index}})
	s.watch.publish(ref.Set, []int32{ref.Index})
}

// pilotStopping tells the scheduler that pilot w handed a copy back: it
// is stopping and gets no copy from now on (store/pilot.go). Call with mu
// held, before the scheduler decides.
func (s *Server) pilotStopping(now time.Time, w sched.WorkerID) {
	s.log.Info("pilot handed a copy back: no more copies to it", "worker", w)
	s.apply(sched.Event{Kind: sched.EventWorkerStopping, Time: seconds(now), Worker: w})
}

// retireWorkers marks gone, at most once every retireEvery, the workers
// whose lease lapsed longer than Config.WorkerRetention ago. Call with mu
// held.
func (s *Server) retireWorkers(now time.Time) {
	if now.Sub(s.lastRetire) < retireEvery {
		return
	}
	s.lastRetire = now
	n, err := s.db.RetireWorkers(context.Background(), now.Add(-s.cfg.WorkerRetention))
	if err != nil {
		s.log.Error("retire lapsed workers", "err", err.Error())
	} else if n > 0 {
		s.log.Info("workers lapsed past the retention marked gone", "workers", n, "retention", s.cfg.WorkerRetention)
	}
}
