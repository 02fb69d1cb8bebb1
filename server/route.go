package server

import (
	"context"
	"slices"
	"strings"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// This file is routes at the server's edge (sched/route.go): the warning
// for a set routed where no worker has been, the route a retry of a
// forgotten set must carry, and the queued work a pool may run.

// unknownRoute reports whether res's set, just created, is routed to a
// pool or partition under which no worker has ever registered: the
// disclose is accepted (pools come and go), and the caller is told.
func (s *Server) unknownRoute(ctx context.Context, res store.DiscloseResult) bool {
	r := res.Set.Route
	if r.IsZero() || !res.Created || res.Replayed {
		return false
	}
	known, err := s.db.RouteKnown(ctx, r)
	if err != nil {
		s.log.Warn("look up a set's route", "set", res.Set.ID, "err", err.Error())
		return false
	}
	return !known
}

// retriedRoute is the route an EventRetried of set id must carry: the
// set's own when the scheduler no longer holds the set (the event then
// makes it anew), else none (ignored). Call with s.mu held.
func (s *Server) retriedRoute(ctx context.Context, id sched.SetID) sched.Route {
	if s.sched.HoldsSet(id) {
		return sched.Route{}
	}
	r, err := s.db.SetRoute(ctx, id)
	if err != nil {
		s.log.Warn("read a retried set's route", "set", id, "err", err.Error())
	}
	return r
}

// fillPartitionQueues adds to a pool's answer the queued work routed to
// the pool or to no pool, by the partition it names ("" first, always
// there), sorted by partition.
func (s *Server) fillPartitionQueues(pool string, out *batchv1.ReportPilotsResponse) {
	s.mu.Lock()
	qs := s.sched.QueuedByRoute(func(r sched.Route) bool { return r.Pool == "" || r.Pool == pool })
	s.mu.Unlock()
	// The entry for no partition is always there, so that a pool tells
	// this answer from an older server's, which has none.
	out.PartitionQueues = append(out.PartitionQueues, &batchv1.PartitionQueue{})
	at := map[string]*batchv1.PartitionQueue{"": out.PartitionQueues[0]}
	for _, q := range qs {
		pq := at[q.Route.Partition]
		if pq == nil {
			pq = &batchv1.PartitionQueue{Partition: q.Route.Partition}
			at[q.Route.Partition] = pq
			out.PartitionQueues = append(out.PartitionQueues, pq)
		}
		pq.QueuedRequested += int64(q.Requested)
		pq.QueuedDisclosed += int64(q.Disclosed)
	}
	slices.SortFunc(out.PartitionQueues, func(a, b *batchv1.PartitionQueue) int { return strings.Compare(a.Partition, b.Partition) })
}
