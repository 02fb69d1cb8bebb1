// Fair share between users: weights from the store, usage restored from
// the ledger at start, the users' standing for GetCluster and /metrics.

package server

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// usageBuckets is how many ledger buckets a half-life is cut into when
// usage is restored: decaying a bucket from its middle errs by at most
// 2^(1/(2·usageBuckets)) − 1 ≈ 1.1% either way.
const usageBuckets = 32

// usageHalfLives is how far back the ledger is read at start: older bills
// weigh less than 2^-usageHalfLives of their slot-seconds.
const usageHalfLives = 16

// restoreFairShare gives a new scheduler the users' weights and their
// decayed usage from the ledger. Call with mu held (or before serving).
func (s *Server) restoreFairShare(ctx context.Context, sc *sched.Scheduler, now time.Time) error {
	if !sc.FairShareOn() {
		return nil
	}
	us, err := s.db.ListUsers(ctx)
	if err != nil {
		return err
	}
	for _, u := range us {
		if u.Weight > 0 && u.Weight != 1 {
			if err := sc.SetUserWeight(u.Name, u.Weight); err != nil {
				return err
			}
		}
	}
	hl := s.halfLife()
	if math.IsInf(hl, 1) {
		hl = 30 * 24 * 3600 // no decay: a month of the ledger
	}
	width := time.Duration(hl / usageBuckets * float64(time.Second))
	since := now.Add(-time.Duration(usageHalfLives * hl * float64(time.Second)))
	bs, err := s.db.Usage(ctx, since, width)
	if err != nil {
		return err
	}
	for _, b := range bs {
		sc.AddUsage(b.Owner, b.SlotSeconds, seconds(b.At))
	}
	return nil
}

// halfLife is the scheduler's usage half-life in seconds (+Inf: none).
func (s *Server) halfLife() float64 {
	hl := s.cfg.Sched.FairShareHalfLife
	switch {
	case hl == 0:
		return sched.DefaultFairShareHalfLife
	case hl < 0:
		return math.Inf(1)
	}
	return hl
}

// refreshShares copies the users' standing for readers. Call with mu held;
// the dispatch loop calls it every tick, weight changes at once.
func (s *Server) refreshShares() {
	sh := s.sched.UserShares(seconds(s.now()))
	s.statsMu.Lock()
	s.shares = sh
	s.statsMu.Unlock()
}

func (s *Server) sharesSnapshot() []sched.UserShare {
	s.statsMu.RLock()
	defer s.statsMu.RUnlock()
	return s.shares
}

func sharesToProto(us []sched.UserShare) []*batchv1.UserShare {
	out := make([]*batchv1.UserShare, 0, len(us))
	for _, u := range us {
		out = append(out, &batchv1.UserShare{Name: u.User, Weight: u.Weight, Held: int32(u.Held), Queued: int32(u.Queued), Share: u.Share, Usage: u.Usage})
	}
	return out
}

// SetUserWeight sets a user's fair-share weight in the store and the
// scheduler.
func (h userHandler) SetUserWeight(ctx context.Context, req *batchv1.SetUserWeightRequest) (*batchv1.SetUserWeightResponse, error) {
	s := h.s
	u, err := s.db.SetUserWeight(ctx, req.Name, req.Weight)
	if err != nil {
		return nil, err
	}
	s.setSchedWeight(u.Name, u.Weight)
	s.log.InfoContext(ctx, "user weight set", "user", u.Name, "weight", u.Weight, "by", callerFrom(ctx))
	return &batchv1.SetUserWeightResponse{User: userToProto(u)}, nil
}

// setSchedWeight gives the scheduler a weight the store holds.
func (s *Server) setSchedWeight(name string, w float64) {
	s.apiWrite(func() {
		if err := s.sched.SetUserWeight(name, w); err != nil {
			s.log.Error("scheduler refused a weight", "user", name, "err", err.Error())
		}
		s.refreshShares()
	})
}

// shareCollector exports each user's fair-share standing as last
// refreshed (every dispatch tick).
type shareCollector struct{ s *Server }

var (
	shareWeightDesc = prometheus.NewDesc("batchd_user_weight", "Fair-share weight of each user with requested work or usage on record.", []string{"user"}, nil)
	shareShareDesc  = prometheus.NewDesc("batchd_user_share_slots", "Weighted max-min fair share of the slots among users with requested work.", []string{"user"}, nil)
	shareHeldDesc   = prometheus.NewDesc("batchd_user_held_slots", "Slots held by the user's running requested copies.", []string{"user"}, nil)
	shareQueuedDesc = prometheus.NewDesc("batchd_user_queued_requested_tasks", "The user's requested tasks waiting for a slot.", []string{"user"}, nil)
	shareUsageDesc  = prometheus.NewDesc("batchd_user_usage_slot_seconds", "Slot-seconds of the user's finished requested work, decayed with the fair-share half-life.", []string{"user"}, nil)
)

func (c shareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{shareWeightDesc, shareShareDesc, shareHeldDesc, shareQueuedDesc, shareUsageDesc} {
		ch <- d
	}
}

func (c shareCollector) Collect(ch chan<- prometheus.Metric) {
	for _, u := range c.s.sharesSnapshot() {
		ch <- prometheus.MustNewConstMetric(shareWeightDesc, prometheus.GaugeValue, u.Weight, u.User)
		ch <- prometheus.MustNewConstMetric(shareShareDesc, prometheus.GaugeValue, u.Share, u.User)
		ch <- prometheus.MustNewConstMetric(shareHeldDesc, prometheus.GaugeValue, float64(u.Held), u.User)
		ch <- prometheus.MustNewConstMetric(shareQueuedDesc, prometheus.GaugeValue, float64(u.Queued), u.User)
		ch <- prometheus.MustNewConstMetric(shareUsageDesc, prometheus.GaugeValue, u.Usage, u.User)
	}
}
