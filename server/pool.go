package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// Limits of a pool's report.
const (
	maxPilotsPerReport = 10000
	maxPoolNameLen     = 100
	// poolForget is how long a pool that stopped reporting stays listed.
	poolForget = 2 * time.Minute
)

// pilotStates are the states /metrics always shows (0 when none): the
// Slurm states a pilot passes through. Other states are counted as reported.
var pilotStates = []string{"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "COMPLETED", "PREEMPTED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"}

// pilotBook keeps the last report of each elastic pool, in memory only:
// a pool reports every few seconds, so a restarted server knows its pilots
// again at the next report.
type pilotBook struct {
	mu    sync.Mutex
	pools map[string]*poolReport
}

type poolReport struct {
	owner  string
	engine string
	at     time.Time
	err    string
	pilots []*batchv1.Pilot
}

// put records a pool's report and returns the pilots of its previous one;
// a pool name belongs to the worker user that reported it first (while
// the server runs).
func (b *pilotBook) put(owner, name, engine, lastErr string, pilots []*batchv1.Pilot, now time.Time) ([]*batchv1.Pilot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	if b.pools == nil {
		b.pools = map[string]*poolReport{}
	}
	var before []*batchv1.Pilot
	if old := b.pools[name]; old != nil {
		if old.owner != owner {
			return nil, sched.Errorf(sched.EPERMISSION, "pool %q is reported by another worker token", name)
		}
		before = old.pilots
	}
	for _, p := range pilots {
		p.Pool = name
	}
	b.pools[name] = &poolReport{owner: owner, engine: engine, at: now, err: lastErr, pilots: pilots}
	return before, nil
}

// expire forgets pools silent for poolForget. Call with b.mu held.
func (b *pilotBook) expire(now time.Time) {
	for name, p := range b.pools {
		if now.Sub(p.at) > poolForget {
			delete(b.pools, name)
		}
	}
}

// snapshot returns the pools and their pilots, by pool name then pilot id.
func (b *pilotBook) snapshot(now time.Time) ([]*batchv1.Pool, []*batchv1.Pilot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	names := make([]string, 0, len(b.pools))
	for n := range b.pools {
		names = append(names, n)
	}
	slices.Sort(names)
	var pools []*batchv1.Pool
	var pilots []*batchv1.Pilot
	for _, n := range names {
		p := b.pools[n]
		pools = append(pools, &batchv1.Pool{Name: n, Engine: p.engine, ReportedAt: ts(p.at), LastError: p.err})
		pilots = append(pilots, p.pilots...)
	}
	return pools, pilots
}

// ReportPilots records a pool's pilots and answers the queue lengths and
// the live workers (up or lease-lapsed, with how long each has been
// silent), from which the pool sizes itself and finds dead pilots. The tokens of pilots
// that ended, or that the pool no longer lists, are revoked.
func (h workerHandler) ReportPilots(ctx context.Context, req *batchv1.ReportPilotsRequest) (*batchv1.ReportPilotsResponse, error) {
	s := h.s
	if req.Pool == "" || len(req.Pool) > maxPoolNameLen {
		return nil, sched.Errorf(sched.EINVALID, "pool name must have 1 to %d bytes", maxPoolNameLen)
	}
	if len(req.Pilots) > maxPilotsPerReport {
		return nil, sched.Errorf(sched.EINVALID, "a report lists at most %d pilots", maxPilotsPerReport)
	}
	for _, p := range req.Pilots {
		if p.Id == "" {
			return nil, sched.Errorf(sched.EINVALID, "a pilot's id is empty")
		}
	}
	before, err := s.pools.put(callerFrom(ctx), req.Pool, req.Engine, strings.TrimSpace(req.LastError), req.Pilots, s.now())
	if err != nil {
		return nil, err
	}
	s.revokeEndedPilots(ctx, callerFrom(ctx), before, req.Pilots)
	ws, err := s.db.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	st := s.statsSnapshot()
	out := &batchv1.ReportPilotsResponse{QueuedRequested: int64(st.QueuedRequested), QueuedDisclosed: int64(st.QueuedDisclosed),
		LeaseSeconds: s.cfg.Lease.Seconds()}
	s.fillQueuedNeeds(out)
	s.fillPartitionQueues(req.Pool, out)
	names := make([]sched.WorkerID, 0, len(req.Pilots))
	for _, p := range req.Pilots {
		if p.Worker != "" {
			names = append(names, sched.WorkerID(p.Worker))
		}
	}
	known, err := s.db.RegisteredWorkers(ctx, callerFrom(ctx), names)
	if err != nil {
		return nil, err
	}
	for _, n := range known {
		out.Registered = append(out.Registered, string(n))
	}
	now := s.now()
	for _, w := range ws {
		if w.State == "up" || w.State == "lease-lapsed" {
			// A heartbeat that did not get the lock is heard (heardAt)
			// without reaching the store: the later of the two counts.
			last := w.LastHeartbeat
			if cell, ok := s.heardAt(w.ID); ok {
				if at := time.Unix(0, cell.Load()); at.After(last) {
					last = at
				}
			}
			out.Workers = append(out.Workers, &batchv1.PoolWorker{Name: w.Name, Slots: w.Slots, BusySlots: w.BusySlots, State: w.State,
				SilentSeconds: max(0, now.Sub(last).Seconds())})
		}
	}
	return out, nil
}

// pilotCollector exports batchd_pilots{state}: the pilots the pools last
// reported, by their batch system's state.
type pilotCollector struct{ s *Server }

var pilotDesc = prometheus.NewDesc("batchd_pilots", "Pilots of the elastic pools as last reported, per batch-system state.", []string{"state"}, nil)

func (c pilotCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pilotDesc }

func (c pilotCollector) Collect(ch chan<- prometheus.Metric) {
	_, pilots := c.s.pools.snapshot(c.s.now())
	n := map[string]int{}
	for _, st := range pilotStates {
		n[st] = 0
	}
	for _, p := range pilots {
		n[p.State]++
	}
	for st, v := range n {
		ch <- prometheus.MustNewConstMetric(pilotDesc, prometheus.GaugeValue, float64(v), st)
	}
}
