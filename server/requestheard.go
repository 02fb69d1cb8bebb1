package server

import (
	"time"

	"batchd/sched"
	"batchd/store"
)

// A request is stamped when its write transaction begins: its visible
// response counts from there. The scheduler hears of it only when the API
// batch that carried it has committed (apiBatch), and decides then. The
// store records that time with the decision that follows, so that a
// replay of the trace hears the request when this server did
// (store.ApplyDecisionsHeardAt, sched.TraceTask.HeardAt).

// requestHeard notes that the scheduler heard the request call whose
// tasks were stamped at. Call with mu held, after applying the request.
func (s *Server) requestHeard(set sched.SetID, at time.Time) {
	s.requestsHeard = append(s.requestsHeard, store.RequestHeard{Set: set, RequestedAt: at})
}

// takeRequestsHeard returns the request calls heard since the last
// decision, and forgets them. Call with mu held.
func (s *Server) takeRequestsHeard() []store.RequestHeard {
	h := s.requestsHeard
	s.requestsHeard = nil
	return h
}
