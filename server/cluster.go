package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// billingHandler implements BillingService.
type billingHandler struct{ s *Server }

// GetBill returns the caller's bill; an admin may read anyone's (owner
// "*": everyone's). A user asking for another user's bill gets
// PermissionDenied.
func (h billingHandler) GetBill(ctx context.Context, req *batchv1.GetBillRequest) (*batchv1.GetBillResponse, error) {
	s := h.s
	since, err := timeArg("since", req.Since)
	if err != nil {
		return nil, err
	}
	until, err := timeArg("until", req.Until)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkPageSize(req.PageSize)); err != nil {
		return nil, err
	}
	owner := callerFrom(ctx)
	if req.Owner != "" && req.Owner != owner {
		if !isAdmin(ctx) {
			return nil, sched.Errorf(sched.EPERMISSION, "you may read your own bill only (you are %q)", owner)
		}
		owner = req.Owner
	}
	if req.SetId != 0 {
		// A set of another owner is not found (an admin's bill of a set is
		// its owner's).
		o, err := s.ownerFor(ctx, sched.SetID(req.SetId))
		if err != nil {
			return nil, err
		}
		if isAdmin(ctx) && (req.Owner == "" || req.Owner == store.AllOwners) {
			owner = o
		}
		if _, err := s.db.GetTaskSet(ctx, owner, sched.SetID(req.SetId)); err != nil {
			return nil, err
		}
	}
	if !since.IsZero() && !until.IsZero() && until.Before(since) {
		return nil, sched.Errorf(sched.EINVALID, "until is before since")
	}
	bill, err := s.db.GetBillGroups(ctx, store.BillInput{Owner: owner, Since: since, Until: until, SetID: sched.SetID(req.SetId),
		IncludeLines: req.IncludeLines, PageSize: req.PageSize, PageToken: req.PageToken})
	if err != nil {
		return nil, err
	}
	lines, tot, next := bill.Lines, bill.Totals, bill.Next
	out := &batchv1.GetBillResponse{NextPageToken: next, PriceSlotSecond: s.cfg.Prices.SlotSecond, PriceCpuSecond: s.cfg.Prices.CPUSecond, Totals: &batchv1.BillTotals{Lines: tot.Lines,
		BilledSlotSeconds: tot.BilledSlotSeconds, BilledCpuSeconds: tot.BilledCPUSeconds, FreeSlotSeconds: tot.FreeSlotSeconds,
		Free: freeWorkToProto(tot.Free), RequestedWorkSlotSeconds: tot.RequestedWorkSlotSeconds, ScaledBilledResources: tot.ScaledBilledResources, Amount: tot.Amount}}
	for _, g := range bill.BySet {
		out.BySet = append(out.BySet, billGroupToProto(g))
	}
	for _, g := range bill.ByOwner {
		out.ByOwner = append(out.ByOwner, billGroupToProto(g))
	}
	for _, l := range lines {
		out.Lines = append(out.Lines, billLineToProto(l))
	}
	return out, nil
}

// clusterHandler implements ClusterService.
type clusterHandler struct{ s *Server }

// GetCluster returns the live workers (every one with all_workers),
// slots, queue lengths and the live metrics.
func (h clusterHandler) GetCluster(ctx context.Context, req *batchv1.GetClusterRequest) (*batchv1.GetClusterResponse, error) {
	s := h.s
	list := s.db.ListWorkers
	if req.AllWorkers {
		list = s.db.ListAllWorkers
	}
	ws, err := list(ctx)
	if err != nil {
		return nil, err
	}
	st := s.statsSnapshot()
	cfg := s.sched.Config()
	out := &batchv1.GetClusterResponse{Slots: int32(st.Slots), BusySlots: int32(st.BusySlots),
		Queues: &batchv1.QueueLengths{Requested: int64(st.QueuedRequested), Disclosed: int64(st.QueuedDisclosed),
			SuspendedCopies: int64(st.SuspendedCopies), RunningCopies: int64(st.RunningCopies), SpeculativeCopies: int64(st.SpeculativeCopies)},
		Metrics: s.metrics.snapshot(st), Policy: string(cfg.Policy), Speculation: string(cfg.Speculation), Preemption: string(cfg.Preemption),
		StartedAt: ts(s.startedAt), Version: s.cfg.Version, ShareUnisolatedWorkers: s.cfg.ShareUnisolated}
	if cfg.Speculation == sched.SpecBudgeted {
		out.Speculation = fmt.Sprintf("budgeted-%d", cfg.Budget)
	}
	for _, w := range ws {
		out.Workers = append(out.Workers, workerToProto(w))
	}
	out.Pools, out.Pilots = s.pools.snapshot(s.now())
	out.FairShare = cfg.FairShare
	out.Users = sharesToProto(s.sharesSnapshot())
	return out, nil
}

// metrics are the live metrics of DESIGN.md since the server started,
// exported at /metrics and in GetCluster. Writers hold Server.mu; the sums
// for GetCluster have their own lock so that readers never wait for a long
// store transaction.
type metrics struct {
	s   *Server
	reg *prometheus.Registry

	response, slowdown prometheus.Histogram
	finished           prometheus.Counter
	billed             prometheus.Counter
	free               *prometheus.CounterVec
	specStarted        prometheus.Counter
	clamps             *prometheus.CounterVec
	retries            *prometheus.CounterVec

	mu                                   sync.Mutex
	nFinished, nSpecStarted              int64
	sumResponse, sumSlowdown, sumService float64
	sumBilled                            float64
	// sumFree sums the free work by part; its executed_unrequested part
	// counts every copy that won while its task was disclosed, and
	// sumClaimed the part of it billed since, when its task was requested
	// after it had executed: no longer free.
	sumFree    sched.FreeWork
	sumClaimed float64
	// sumRecovered is the part of lost_with_worker whose copies' results
	// came back late and were kept: no longer lost.
	sumRecovered                 float64
	last                         time.Time
	slotSeconds, busySlotSeconds float64
	lastSlots, lastBusy          int
}

func newMetrics(s *Server) *metrics {
	m := &metrics{s: s, reg: prometheus.NewRegistry(), last: s.startedAt}
	buckets := []float64{0, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	m.response = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batchd_visible_response_seconds",
		Help: "Visible response time of finished tasks: max(0, executed - requested).", Buckets: buckets})
	m.slowdown = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batchd_visible_slowdown",
		Help:    "Visible slowdown of finished tasks: visible response time / service time.",
		Buckets: []float64{0, 0.1, 0.5, 1, 2, 5, 10, 20, 50, 100}})
	m.finished = prometheus.NewCounter(prometheus.CounterOpts{Name: "batchd_finished_tasks_total", Help: "Requested tasks finished."})
	m.billed = prometheus.NewCounter(prometheus.CounterOpts{Name: "batchd_billed_slot_seconds_total", Help: "Slot-seconds written to the ledger."})
	m.free = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batchd_free_slot_seconds_total",
		Help: "Slot-seconds nobody pays for, per part: executed_unrequested (won while the task was only disclosed; " +
			"batchd_billed_slot_seconds_total counts it again if the task is requested later), speculative_lost, canceled, lost_with_worker " +
			"(a lost copy whose result came back late and was kept stays counted here; batchd_late_results_total counts those)."},
		[]string{"part"})
	for _, p := range sched.FreeParts {
		m.free.WithLabelValues(string(p)) // every part shows, from 0
	}
	m.clamps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batchd_bill_clamps_total",
		Help: "Winning copies whose reported run time was cut to what the server observed, per worker."}, []string{"worker"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batchd_task_retries_total",
		Help: "Tasks retried in place (a new attempt), by who retried: user (Retry) or policy (the set's retry policy on an exit code or timeout)."},
		[]string{"by"})
	m.specStarted = prometheus.NewCounter(prometheus.CounterOpts{Name: "batchd_speculative_copies_started_total", Help: "Speculative copies started."})
	stat := func(f func(sched.Stats) float64) func() float64 {
		return func() float64 { return f(s.statsSnapshot()) }
	}
	gauge := func(name, help string, labels prometheus.Labels, f func(sched.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, stat(f))
	}
	m.reg.MustRegister(m.response, m.slowdown, m.finished, m.billed, m.free, m.specStarted, m.clamps, m.retries,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("batchd_slots", "Worker slots up.", nil, func(st sched.Stats) float64 { return float64(st.Slots) }),
		gauge("batchd_busy_slots", "Slots running a copy.", nil, func(st sched.Stats) float64 { return float64(st.BusySlots) }),
		gauge("batchd_queue_length", "Tasks waiting for a slot, per class.", prometheus.Labels{"class": "requested"},
			func(st sched.Stats) float64 { return float64(st.QueuedRequested) }),
		gauge("batchd_queue_length", "Tasks waiting for a slot, per class.", prometheus.Labels{"class": "disclosed"},
			func(st sched.Stats) float64 { return float64(st.QueuedDisclosed) }),
		gauge("batchd_copies", "Live copies, per state.", prometheus.Labels{"state": "running"},
			func(st sched.Stats) float64 { return float64(st.RunningCopies) }),
		gauge("batchd_copies", "Live copies, per state.", prometheus.Labels{"state": "suspended"},
			func(st sched.Stats) float64 { return float64(st.SuspendedCopies) }),
		gauge("batchd_speculative_copies", "Live speculative copies.", nil, func(st sched.Stats) float64 { return float64(st.SpeculativeCopies) }),
		gauge("batchd_beta", "Pareto shape of task durations, fitted online (Hopper).", nil, func(st sched.Stats) float64 { return st.Beta }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_speculative_copies_won_total", Help: "Speculative copies that won."},
			stat(func(st sched.Stats) float64 { return float64(st.SpeculativeWon) })),
		pilotCollector{s}, shareCollector{s},
		isolationCollector{s},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_load", Help: "Busy slot-seconds / slot-seconds since the server started."},
			func() float64 { return m.snapshot(s.statsSnapshot()).Load }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_scaled_billed_resources", Help: "Billed slot-seconds / requested work (Petrou)."},
			func() float64 { return m.snapshot(s.statsSnapshot()).ScaledBilledResources }),
	)
	return m
}

// observeFinished records a requested task that finished.
func (m *metrics) observeFinished(t sched.Task) {
	m.finished.Inc()
	m.response.Observe(t.VisibleResponseSeconds)
	slow := 0.0
	if t.ServiceSeconds > 0 {
		slow = t.VisibleResponseSeconds / t.ServiceSeconds
	}
	m.slowdown.Observe(slow)
	m.mu.Lock()
	m.nFinished++
	m.sumResponse += t.VisibleResponseSeconds
	m.sumSlowdown += slow
	m.sumService += t.ServiceSeconds
	m.mu.Unlock()
}

func (m *metrics) addBilled(v float64) {
	m.billed.Add(v)
	m.mu.Lock()
	m.sumBilled += v
	m.mu.Unlock()
}

// addBilledExecuted records a bill for a task that had executed while
// disclosed: its slot-seconds move from free to billed.
func (m *metrics) addBilledExecuted(v float64) {
	m.addBilled(v)
	m.mu.Lock()
	m.sumClaimed += v
	m.mu.Unlock()
}

// addFree adds v slot-seconds to part p of the free work.
func (m *metrics) addFree(p sched.FreePart, v float64) {
	v = max(0, v)
	m.free.WithLabelValues(string(p)).Add(v)
	m.mu.Lock()
	m.sumFree.Add(p, v)
	m.mu.Unlock()
}

// recoverLost takes v slot-seconds, counted as lost with a worker when a
// copy was lost, out of the free work: the copy's late result was kept.
// (The Prometheus counter, which cannot go down, keeps them.)
func (m *metrics) recoverLost(v float64) {
	m.mu.Lock()
	m.sumRecovered += max(0, v)
	m.mu.Unlock()
}

// billClamped counts a report of worker w whose run time was cut.
func (m *metrics) billClamped(w sched.WorkerID) {
	m.clamps.WithLabelValues(string(w)).Inc()
}

// retried counts n tasks retried in place by by (user or policy).
func (m *metrics) retried(by string, n int) {
	m.retries.WithLabelValues(by).Add(float64(n))
}

func (m *metrics) speculativeStarted() {
	m.specStarted.Inc()
	m.mu.Lock()
	m.nSpecStarted++
	m.mu.Unlock()
}

// account adds the time since the last change to the load integrals, with
// the slots that held during it, and notes the slots from now on.
func (m *metrics) account(now time.Time, st sched.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dt := now.Sub(m.last).Seconds(); dt > 0 {
		m.slotSeconds += dt * float64(m.lastSlots)
		m.busySlotSeconds += dt * float64(m.lastBusy)
		m.last = now
	}
	m.lastSlots, m.lastBusy = st.Slots, st.BusySlots
}

// snapshot returns the metrics for GetCluster.
func (m *metrics) snapshot(st sched.Stats) *batchv1.Metrics {
	now := m.s.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	free := m.sumFree
	free.ExecutedUnrequestedSlotSeconds = max(0, free.ExecutedUnrequestedSlotSeconds-m.sumClaimed)
	free.LostWithWorkerSlotSeconds = max(0, free.LostWithWorkerSlotSeconds-m.sumRecovered)
	out := &batchv1.Metrics{FinishedTasks: m.nFinished, BilledSlotSeconds: m.sumBilled,
		FreeSlotSeconds: free.Total(), Free: freeWorkToProto(free),
		SpeculativeCopiesStarted: m.nSpecStarted, SpeculativeCopiesWon: st.SpeculativeWon,
		Beta: st.Beta, BetaSamples: int64(st.BetaSamples), LatencySeconds: st.Lag}
	if m.nFinished > 0 {
		out.MeanVisibleResponseSeconds = m.sumResponse / float64(m.nFinished)
		out.MeanVisibleSlowdown = m.sumSlowdown / float64(m.nFinished)
	}
	slotSec, busySec := m.slotSeconds, m.busySlotSeconds
	if dt := now.Sub(m.last).Seconds(); dt > 0 {
		slotSec += dt * float64(m.lastSlots)
		busySec += dt * float64(m.lastBusy)
	}
	if slotSec > 0 {
		out.Load = busySec / slotSec
	}
	if h := now.Sub(m.s.startedAt).Hours(); h > 0 {
		out.TasksPerHour = float64(m.nFinished) / h
	}
	if m.sumService > 0 {
		out.ScaledBilledResources = m.sumBilled / m.sumService
	}
	return out
}
