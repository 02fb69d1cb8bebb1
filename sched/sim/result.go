package sim

import (
	"math"
	"sort"
)

// JobResult is one measured request: a task in petrou, a job in cluster
// and mixed.
type JobResult struct {
	Set         int32
	Group       int32 // the request's position in its set
	Tasks       int32
	RequestedAt float64
	// Response is the visible response time: max(0, last result − request);
	// for a cluster job, its completion time.
	Response float64
	// Flood marks a job of the flooding user (Params.FloodWork).
	Flood bool
	// After is the set the job waited for (Params.ChainProb; 0: none).
	After int32
	// Censored marks a closed-loop request made in the window but not
	// delivered by its end: Response is its response so far.
	Censored bool
}

// Result is what one run measured over its window (after the warm-up).
type Result struct {
	Params Params

	// Requests is the number of measured requests (tasks in petrou, jobs
	// in cluster and mixed): in petrou and mixed those requested in the
	// window, delivered or not; in cluster the jobs that arrived in it and
	// completed. Tasks is the requested tasks delivered in the window.
	Requests, Tasks int
	// Censored counts the closed-loop requests made in the window and not
	// delivered by its end; each counts with its response so far.
	Censored int
	// MeanVisibleResponse is the mean visible response time of the
	// measured requests (job completion time for cluster jobs), seconds.
	MeanVisibleResponse float64
	// MeanVisibleSlowdown is the mean of response / service time (the
	// longest winning copy for a multi-task request).
	MeanVisibleSlowdown float64
	// ThroughputPerHour is delivered requested tasks per hour of window.
	ThroughputPerHour float64
	// Load is busy slot-seconds over slot-seconds in the window.
	Load float64
	// FullShare is the share of the window during which every slot was
	// busy: a straggler found then waits for a slot unless its job holds
	// one (Hopper §3, Fig. 1a against Fig. 2).
	FullShare float64
	// BilledSlotSeconds follows DESIGN.md's rule (winning copies of
	// requested tasks), except under the batch policies, whose users pay
	// for everything they submitted that ran.
	BilledSlotSeconds float64
	// RequestedWork is the slot-seconds of the winning copies of the
	// delivered requested tasks.
	RequestedWork float64
	// ScaledBilled is BilledSlotSeconds / RequestedWork (Petrou's scaled
	// billed resources).
	ScaledBilled float64
	// WasteSlotSeconds is busy time that did not become a requested
	// result: lost races, canceled and never-requested disclosed work.
	WasteSlotSeconds float64
	// Unfinished counts measured cluster jobs still running at the end;
	// UnfinishedFlood those of them that are the flooding user's
	// (Params.FloodWork).
	Unfinished, UnfinishedFlood int

	// LostCopies counts copies lost with their worker (Params.WorkerMTBF).
	LostCopies int64

	SpeculativeStarted, SpeculativeWon int64
	Beta                               float64

	// Events counts simulator events; Applied the events handed to the
	// scheduler; Decisions the decisions carried out.
	Events, Applied, Decisions int64
	WallSeconds                float64
	// Jobs holds one entry per measured request when Params.KeepJobs.
	Jobs []JobResult
}

func (m *sim) result() Result {
	a := &m.acc
	r := Result{Params: m.p, Requests: a.requests, Censored: a.censored, Tasks: a.tasks, Unfinished: a.unfinished, UnfinishedFlood: a.unfinishedFlood,
		Events: a.events, Applied: a.applied, Decisions: a.decisions, Jobs: a.jobs, LostCopies: a.lost}
	if a.requests > 0 {
		r.MeanVisibleResponse = a.sumV / float64(a.requests)
		r.MeanVisibleSlowdown = a.sumSlow / float64(a.requests)
	}
	win := m.end - m.warm
	r.ThroughputPerHour = float64(a.tasks) / (win / 3600)
	r.Load = a.busy / (win * float64(m.p.Slots))
	full := a.full
	if m.nbusy == m.p.Slots {
		full += m.inWindow(m.fullSince, m.now)
	}
	r.FullShare = full / win
	r.RequestedWork = a.requestedWork
	r.BilledSlotSeconds = a.billed
	if m.batch {
		r.BilledSlotSeconds = a.busy
	}
	if a.requestedWork > 0 {
		r.ScaledBilled = r.BilledSlotSeconds / a.requestedWork
	}
	r.WasteSlotSeconds = math.Max(0, a.busy-a.requestedWork)
	st := m.s.Stats()
	r.SpeculativeStarted, r.SpeculativeWon, r.Beta = st.SpeculativeStarted, st.SpeculativeWon, st.Beta
	sort.Slice(r.Jobs, func(i, j int) bool {
		if r.Jobs[i].Set != r.Jobs[j].Set {
			return r.Jobs[i].Set < r.Jobs[j].Set
		}
		return r.Jobs[i].Group < r.Jobs[j].Group
	})
	return r
}

// Metric names a per-run measurement.
type Metric string

// The metrics a Result holds (Result.Value).
const (
	MetricResponse   Metric = "visible-response" // MetricResponse is MeanVisibleResponse.
	MetricSlowdown   Metric = "visible-slowdown" // MetricSlowdown is MeanVisibleSlowdown.
	MetricThroughput Metric = "throughput"       // MetricThroughput is ThroughputPerHour.
	MetricLoad       Metric = "load"             // MetricLoad is Load.
	MetricScaled     Metric = "scaled-billed"    // MetricScaled is ScaledBilled.
	MetricWaste      Metric = "waste"            // MetricWaste is WasteSlotSeconds.
)

// Value returns the metric's value in r.
func (r *Result) Value(m Metric) float64 {
	switch m {
	case MetricResponse:
		return r.MeanVisibleResponse
	case MetricSlowdown:
		return r.MeanVisibleSlowdown
	case MetricThroughput:
		return r.ThroughputPerHour
	case MetricLoad:
		return r.Load
	case MetricScaled:
		return r.ScaledBilled
	case MetricWaste:
		return r.WasteSlotSeconds
	}
	return math.NaN()
}

// Summary is a mean over runs with its 95% confidence interval.
type Summary struct {
	N         int
	Mean      float64
	HalfWidth float64 // 95% CI: Mean ± HalfWidth (Student's t)
	Min, Max  float64
}

// Summarize returns the mean of xs and its 95% confidence interval.
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs), Min: math.Inf(1), Max: math.Inf(-1)}
	if len(xs) == 0 {
		return Summary{Mean: math.NaN()}
	}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		v := 0.0
		for _, x := range xs {
			v += (x - s.Mean) * (x - s.Mean)
		}
		sd := math.Sqrt(v / float64(len(xs)-1))
		s.HalfWidth = tQuantile975(len(xs)-1) * sd / math.Sqrt(float64(len(xs)))
	}
	return s
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.NaN()
	case df < len(table):
		return table[df]
	case df < 60:
		return 2.0
	case df < 120:
		return 1.98
	}
	return 1.96
}
