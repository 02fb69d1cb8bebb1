package server

import (
	"context"
	"math"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// defaultPilotTokenTTL is how long a pilot token lives when the pool
// names no time.
const defaultPilotTokenTTL = 24 * time.Hour

// MintWorkerToken mints a token for one pilot of the calling pool: it may
// register only req.Worker, which is claimed for the caller now (so that
// nobody else can take the name first), and lives until it expires or the
// pool reports the pilot ended (ReportPilots). A pilot's own token cannot
// mint (identify refuses it).
func (h workerHandler) MintWorkerToken(ctx context.Context, req *batchv1.MintWorkerTokenRequest) (*batchv1.MintWorkerTokenResponse, error) {
	s := h.s
	c := CallerFrom(ctx)
	if c.Pilot != "" || c.Name == localWorkerUser {
		return nil, sched.Errorf(sched.EPERMISSION, "only a pool's worker token mints pilot tokens")
	}
	ttl := defaultPilotTokenTTL
	if req.TtlSeconds != 0 {
		if math.IsNaN(req.TtlSeconds) || req.TtlSeconds < 0 || req.TtlSeconds > store.MaxPilotTokenTTL.Seconds() {
			return nil, sched.Errorf(sched.EINVALID, "ttl_seconds must be between 0 and %g", store.MaxPilotTokenTTL.Seconds())
		}
		ttl = time.Duration(req.TtlSeconds * float64(time.Second))
	}
	id := sched.WorkerID(req.Worker)
	if id == "" {
		return nil, sched.Errorf(sched.EINVALID, "worker name is empty")
	}
	if err := s.claimWorker(ctx, id); err != nil {
		return nil, err
	}
	token, expires, err := s.db.MintPilotToken(ctx, store.MintPilotTokenInput{Owner: c.Name, Worker: id, TTL: ttl})
	if err != nil {
		return nil, err
	}
	s.log.Info("pilot token minted", "worker", id, "pool_user", c.Name, "expires", expires)
	return &batchv1.MintWorkerTokenResponse{Token: token, ExpiresAt: ts(expires)}, nil
}

// revokeEndedPilots revokes the tokens of a pool's pilots that ended, or
// that the pool listed before and lists no more (its batch system forgot
// them). Call with the pool's previous and new pilots.
func (s *Server) revokeEndedPilots(ctx context.Context, owner string, before, now []*batchv1.Pilot) {
	listed := make(map[string]bool, len(now))
	var gone []sched.WorkerID
	for _, p := range now {
		listed[p.Worker] = true
		if p.Ended && p.Worker != "" {
			gone = append(gone, sched.WorkerID(p.Worker))
		}
	}
	for _, p := range before {
		if p.Worker != "" && !listed[p.Worker] {
			gone = append(gone, sched.WorkerID(p.Worker))
		}
	}
	n, err := s.db.RevokePilotTokens(ctx, owner, gone)
	if err != nil {
		s.log.Error("revoke ended pilots' tokens", "err", err.Error())
		return
	}
	if n > 0 {
		s.log.Info("ended pilots' tokens revoked", "pool_user", owner, "tokens", n)
	}
}
