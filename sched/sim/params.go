package sim

import (
	"context"
	"fmt"
	"math"

	"batchd/sched"
)

// Workload names a family of simulated users and tasks.
type Workload string

const (
	// WorkloadPetrou is Petrou et al. §2 and §4: a closed loop of users on
	// one server who disclose task sets, request tasks in order after
	// exponential think times and cancel the rest with their task-set
	// change probability; exponential service times.
	WorkloadPetrou Workload = "petrou"
	// WorkloadCluster is Hopper §7 / GRASS §6 style: jobs of many tasks
	// arriving online (Poisson), heavy-tailed job sizes, Pareto copy
	// durations, a cluster of many slots at a target utilisation. Every job
	// is disclosed and requested whole on arrival.
	WorkloadCluster Workload = "cluster"
	// WorkloadMixed is batchactive users whose requests are multi-task jobs
	// with stragglers: Petrou's closed loop where each request is a
	// Hopper/GRASS job.
	WorkloadMixed Workload = "mixed"
)

// Workloads lists the workloads.
var Workloads = []Workload{WorkloadPetrou, WorkloadCluster, WorkloadMixed}

// Day is one day in seconds.
const Day = 86400.0

// Params are the parameters of one run. Zero fields take the workload's
// default (see Defaults).
type Params struct {
	Workload Workload
	// Sched configures the scheduler under test (policy, speculation,
	// preemption, ε, ...). Its Seed is set from Seed.
	Sched sched.Config
	Seed  int64

	Slots          int     // total slots
	SlotsPerWorker int     // slots per simulated worker
	Warmup         float64 // seconds simulated before measuring
	Duration       float64 // seconds measured after the warm-up
	// Drain (cluster) is how long past the measured period the run may go
	// on so that measured jobs can finish; jobs still running then count as
	// unfinished.
	Drain float64

	// Closed-loop users (petrou, mixed).
	Users         int
	ChangeProbMax float64 // each user's change probability ~ U(0, ChangeProbMax)
	SetSizeMax    int     // each user's tasks (petrou) or jobs (mixed) per set ~ U{1..SetSizeMax}
	// SetSizePerSet draws the tasks (jobs) per set afresh for every new set
	// from the user's stream; by default each user draws it once and keeps
	// it (one reading of Petrou §2; the experiments draw per set unless a
	// row says per-user sizes).
	SetSizePerSet bool
	ServiceMean   float64 // petrou: exponential service time mean, seconds
	ThinkMean     float64 // exponential think time mean, seconds

	// Multi-task jobs (cluster, mixed).
	Utilization  float64 // cluster: offered load of original copies, 0..1
	Beta         float64 // Pareto shape of copy durations
	TaskScale    float64 // Pareto scale (minimum duration) of copy durations, seconds
	JobSizeAlpha float64 // job sizes (tasks) ~ bounded Pareto with this shape
	JobSizeMax   int     // ... on [1, JobSizeMax]

	// SingleJob (cluster), when positive, replaces the arrivals by one job
	// of SingleJob tasks at time 0 on an otherwise empty cluster; the run
	// ends when it finishes (Hopper Fig. 3: one job's completion time
	// against the slots it is given). Set Warmup negative to measure it.
	SingleJob int

	// WorkPerTask (cluster) is the slot-seconds one task occupies on
	// average, used to set the arrival rate for Utilization; 0 means the
	// Pareto mean x_m·β/(β−1) (see CalibrateWork).
	WorkPerTask float64

	// DecideEvery, when positive, calls Decide at most once per this many
	// virtual seconds (a dispatch tick, as a server's loop has) instead of
	// after every batch of simultaneous events; a freed slot then waits up
	// to DecideEvery for its next copy. It trades a little fidelity for
	// speed on large clusters.
	DecideEvery float64

	// Estimates passes each task's true size (petrou) or its mean duration
	// (cluster, mixed) to the scheduler as EstimateSeconds.
	Estimates bool
	// NoProgress turns progress reports off; the scheduler then estimates
	// t_rem from the Pareto tail alone.
	NoProgress bool
	// ProgressNoise, when positive, makes progress reports noisy as real
	// ones are (LATE's and GRASS's progress scores): each report is the
	// true fraction done times exp(σ·Z), Z standard normal, σ =
	// ProgressNoise, kept in (0, 1). Zero reports exact progress, which
	// makes every estimator's t_rem exact: an oracle, not the papers'
	// systems.
	ProgressNoise float64
	// ProgressEvery, when positive, sends a running copy's progress
	// report every ProgressEvery seconds of its run time (a heartbeat, as
	// Hadoop's and Spark's are: late by up to that long) instead of at
	// work done x_m·2^k.
	ProgressEvery float64

	// The node-level straggler model. Real stragglers are
	// correlated with the machine: a slow node slows every copy on it, and
	// a copy elsewhere escapes; some are intrinsic to the task (data
	// skew), and no copy escapes them.
	//
	// NodeSlowFrac is the fraction of workers that are slow: each worker is
	// slow with this probability (drawn per worker, and per NodeEpoch when
	// that is positive), and every copy that starts on a slow worker takes
	// NodeSlowdown times its drawn duration.
	NodeSlowFrac float64
	// NodeSlowdown is a slow worker's factor (default 4 when NodeSlowFrac
	// is set).
	NodeSlowdown float64
	// NodeEpoch, when positive, redraws which workers are slow every
	// NodeEpoch seconds (a copy keeps the factor of its start); 0 keeps
	// them for the run.
	NodeEpoch float64
	// TaskSkew is the fraction of tasks whose copies all draw the same
	// duration (the task's own work is long: a copy does not escape it,
	// save from a slow node). Every copy's duration keeps its Pareto
	// marginal.
	TaskSkew float64

	// WorkerMTBF, when positive, makes every worker fail after an
	// exponential time with this mean (seconds): the scheduler gets
	// EventWorkerDown, the worker's live copies are lost (their tasks run
	// again, nobody pays for them), and the worker returns with
	// EventWorkerUp after an exponential repair time of mean WorkerRepair
	// (default 60 s).
	WorkerMTBF, WorkerRepair float64
	// BatchCancels lets users of the batch policies cancel. By default
	// (Petrou's model) they cannot: cancel withdraws a set's unrequested
	// tasks, and a batch user submitted every task as requested, so the
	// rest of an abandoned set still runs and is billed.
	BatchCancels bool
	// KeepJobs keeps one JobResult per measured request in Result.Jobs.
	KeepJobs bool
	// FloodWork (cluster), when positive, gives this fraction of the
	// offered work to one flooding user ("flood") who submits one-task
	// jobs; the other jobs keep their sizes and belong to OrdinaryUsers
	// users (default 4), drawn uniformly. The arrival rate keeps the
	// offered load at Utilization. It measures fair share between users
	// (sched.Config.FairShare); JobResult.Flood tells the two apart.
	FloodWork float64
	// ChainProb (cluster) is the probability that a job arrives after the
	// job before it (disclose --after): requested at once, its tasks wait
	// in neither class until that job has ended (sched.EventWaitEnded),
	// and its response time counts the wait. JobResult.After names it.
	ChainProb     float64
	OrdinaryUsers int
	// PlacementSeed, when not 0, renames the workers the scheduler sees by
	// a permutation drawn from it, so that its ties between equally free
	// workers (broken by name) fall elsewhere. Nothing else changes: the
	// workload, every copy's draw and every worker's slowness are the same.
	// Two runs that differ only here measure placement noise (the floor
	// under a job-by-job comparison such as ε-fairness's).
	PlacementSeed int64
}

// Defaults returns the default parameters of workload w: Petrou's Table 3
// point, a 1,000-slot cluster at 60% utilisation, and a mixed workload of 16
// users on 24 slots.
func Defaults(w Workload) Params {
	p := Params{Workload: w}
	switch w {
	case WorkloadPetrou:
		p.Slots, p.SlotsPerWorker = 1, 1
		p.Warmup, p.Duration = 2*Day, 14*Day
		p.Users, p.ChangeProbMax, p.SetSizeMax = 8, 0.2, 15
		p.ServiceMean, p.ThinkMean = 600, 6000
		p.Estimates = true
		p.NoProgress = true
	case WorkloadCluster:
		p.Slots, p.SlotsPerWorker = 1000, 16
		p.Warmup, p.Duration, p.Drain = 900, 3600, 4*3600
		p.Utilization = 0.6
		p.Beta, p.TaskScale = 1.259, 10
		p.JobSizeAlpha, p.JobSizeMax = 0.5, 2000
	case WorkloadMixed:
		p.Slots, p.SlotsPerWorker = 24, 8
		p.Warmup, p.Duration = 3600, 12*3600
		p.Users, p.ChangeProbMax, p.SetSizeMax = 16, 0.2, 8
		p.ThinkMean = 600
		p.Beta, p.TaskScale = 1.259, 10
		p.JobSizeAlpha, p.JobSizeMax = 0.5, 400
	}
	return p
}

// withDefaults fills zero fields from Defaults.
func (p Params) withDefaults() Params {
	d := Defaults(p.Workload)
	setF := func(v *float64, dv float64) {
		if *v == 0 {
			*v = dv
		}
	}
	setI := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	setI(&p.Slots, d.Slots)
	setI(&p.SlotsPerWorker, d.SlotsPerWorker)
	setF(&p.Warmup, d.Warmup)
	setF(&p.Duration, d.Duration)
	setF(&p.Drain, d.Drain)
	setI(&p.Users, d.Users)
	setI(&p.SetSizeMax, d.SetSizeMax)
	setF(&p.ServiceMean, d.ServiceMean)
	setF(&p.ThinkMean, d.ThinkMean)
	setF(&p.Utilization, d.Utilization)
	setF(&p.Beta, d.Beta)
	setF(&p.TaskScale, d.TaskScale)
	setF(&p.JobSizeAlpha, d.JobSizeAlpha)
	setF(&p.DecideEvery, d.DecideEvery)
	setI(&p.JobSizeMax, d.JobSizeMax)
	if p.NodeSlowFrac > 0 && p.NodeSlowdown == 0 {
		p.NodeSlowdown = 4
	}
	if p.Warmup < 0 {
		p.Warmup = 0
	}
	return p
}

// validate checks p after defaults.
func (p Params) validate() error {
	if !(p.ChainProb >= 0 && p.ChainProb <= 1) || (p.ChainProb > 0 && p.Workload != WorkloadCluster) {
		return sched.Errorf(sched.EINVALID, "chain probability %v: want 0 to 1, on the cluster workload", p.ChainProb)
	}
	switch p.Workload {
	case WorkloadPetrou, WorkloadCluster, WorkloadMixed:
	default:
		return sched.Errorf(sched.EINVALID, "unknown workload %q (want petrou, cluster or mixed)", p.Workload)
	}
	switch {
	case p.Slots < 1 || p.SlotsPerWorker < 1:
		return sched.Errorf(sched.EINVALID, "slots must be positive")
	case p.Duration <= 0:
		return sched.Errorf(sched.EINVALID, "duration must be positive")
	case p.Workload != WorkloadCluster && p.Users < 1:
		return sched.Errorf(sched.EINVALID, "users must be positive")
	case p.ChangeProbMax < 0 || p.ChangeProbMax > 1:
		return sched.Errorf(sched.EINVALID, "change probability must be in [0,1]")
	case p.Workload == WorkloadCluster && (p.Utilization <= 0 || p.Utilization > 1.5):
		return sched.Errorf(sched.EINVALID, "utilization must be in (0, 1.5]")
	case p.Workload != WorkloadPetrou && p.Beta <= 1:
		return sched.Errorf(sched.EINVALID, "beta must be above 1 (finite mean)")
	case p.NodeSlowFrac < 0 || p.NodeSlowFrac > 1 || p.TaskSkew < 0 || p.TaskSkew > 1 || p.NodeSlowdown < 0 || p.NodeEpoch < 0 || p.ProgressEvery < 0:
		return sched.Errorf(sched.EINVALID, "node model: slow fraction and task skew must be in [0,1], slowdown, epoch and progress interval not negative")
	case (p.Workload != WorkloadPetrou && p.JobSizeMax < 1) || (p.Workload != WorkloadCluster && p.SetSizeMax < 1):
		return sched.Errorf(sched.EINVALID, "set and job sizes must be positive")
	}
	return nil
}

// String is a compact label of the run's workload parameters.
func (p Params) String() string {
	switch p.Workload {
	case WorkloadPetrou:
		return fmt.Sprintf("petrou users=%d change=0..%.2g set=1..%d service=%g think=%g", p.Users, p.ChangeProbMax, p.SetSizeMax, p.ServiceMean, p.ThinkMean)
	case WorkloadCluster:
		return fmt.Sprintf("cluster slots=%d util=%.2g beta=%.4g", p.Slots, p.Utilization, p.Beta)
	}
	return fmt.Sprintf("mixed users=%d slots=%d change=0..%.2g jobs/set=1..%d think=%g beta=%.4g", p.Users, p.Slots, p.ChangeProbMax, p.SetSizeMax, p.ThinkMean, p.Beta)
}

// jobSize draws a job's number of tasks: floor of a bounded Pareto on
// [1, JobSizeMax+1), so sizes 1..JobSizeMax.
func (p *Params) jobSize(r *rng) int {
	m := int(r.boundedPareto(1, float64(p.JobSizeMax)+1, p.JobSizeAlpha))
	return min(max(m, 1), p.JobSizeMax)
}

// meanJobSize is the exact mean of jobSize.
func (p *Params) meanJobSize() float64 {
	lo, hi, a := 1.0, float64(p.JobSizeMax)+1, p.JobSizeAlpha
	cdf := func(x float64) float64 {
		return (1 - math.Pow(lo/x, a)) / (1 - math.Pow(lo/hi, a))
	}
	s := 0.0
	for i := 1; i <= p.JobSizeMax; i++ {
		s += float64(i) * (cdf(float64(i+1)) - cdf(float64(i)))
	}
	return s
}

// meanCopy is the mean duration of one copy (Pareto mean xm·β/(β−1)).
func (p *Params) meanCopy() float64 { return p.TaskScale * p.Beta / (p.Beta - 1) }

// ArrivalRate is the cluster workload's job arrival rate (jobs per second)
// that offers Utilization of the slots in original copies alone.
func (p Params) ArrivalRate() float64 {
	p = p.withDefaults()
	w := p.WorkPerTask
	if w <= 0 {
		w = p.meanCopy()
	}
	return p.Utilization * float64(p.Slots) / (p.arrivalMeanSize() * w)
}

// floodProb is the probability that an arriving job is the flooder's
// one-task job, so that the flooder's share of the work is FloodWork.
func (p *Params) floodProb() float64 {
	f, m := p.FloodWork, p.meanJobSize()
	if f <= 0 {
		return 0
	}
	return f * m / (1 - f + f*m)
}

// arrivalMeanSize is the mean tasks of an arriving job, flood included.
func (p *Params) arrivalMeanSize() float64 {
	q := p.floodProb()
	return q + (1-q)*p.meanJobSize()
}

// CalibrateWork measures the slot-seconds one task really occupies under
// SRPT with best-effort LATE (the papers' baseline) by a pilot run of p at
// 60% offered load, and returns p with WorkPerTask set to it. With β near
// 1.2 the Pareto mean is carried by stragglers that speculation cuts short,
// so the offered load computed from it overstates the load a cluster sees;
// calibrating puts the baseline's measured load near Utilization, which is
// how Hopper and GRASS set theirs (speeding up a trace to a measured
// utilisation).
func CalibrateWork(ctx context.Context, p Params) (Params, error) {
	p = p.withDefaults()
	q := p
	q.Utilization, q.Seed, q.WorkPerTask, q.KeepJobs = 0.6, 1_000_003, 0, false
	q.Sched = sched.Config{Policy: sched.PolicySRPTxFCFS, Speculation: sched.SpecBestEffortLATE, SpecCap: p.Sched.SpecCap, SlowTaskQuantile: p.Sched.SlowTaskQuantile}
	r, err := Run(ctx, q)
	if err != nil {
		return p, err
	}
	if r.Tasks == 0 {
		return p, sched.Errorf(sched.EINVALID, "calibration run delivered no tasks")
	}
	p.WorkPerTask = r.Load * q.Duration * float64(q.Slots) / float64(r.Tasks)
	return p, nil
}

// StragglerModel is the node-level straggler model and LATE's limits,
// set on every multi-task run of an experiment (Options.Model)
// or of `batchd sim run`. A zero field leaves the run's own value.
type StragglerModel struct {
	NodeSlowFrac, NodeSlowdown, NodeEpoch float64 // Params
	TaskSkew                              float64 // Params
	ProgressEvery, ProgressNoise          float64 // Params
	SpecCap, SlowTaskQuantile             float64 // sched.Config (best-effort-late)
}

// NodeModel is the node-level model the cluster-node experiment uses by
// default: one worker in ten slow (4× on every copy started there, which
// workers are slow redrawn every 10 minutes), progress heartbeats every 5 s
// with lognormal noise σ = 0.3, and LATE as Hadoop and Spark deploy it:
// speculative copies capped at 10% of the slots, only tasks at or below
// the 25th percentile of their job's progress rates. No task skew by
// default: with skewed tasks (--task-skew 0.05) unbounded speculation
// (GRASS's GS in a job's last wave) copies a skewed task without end, and
// SRPT + GRASS saturates the cluster (docs/results.md says so).
var NodeModel = StragglerModel{NodeSlowFrac: 0.1, NodeSlowdown: 4, NodeEpoch: 600, ProgressEvery: 5, ProgressNoise: 0.3, SpecCap: 0.1, SlowTaskQuantile: 0.25}

// Zero reports whether m sets nothing.
func (m StragglerModel) Zero() bool { return m == StragglerModel{} }

// Apply sets m's non-zero fields on p (petrou runs are left alone: one
// server has no stragglers).
func (m StragglerModel) Apply(p *Params) {
	if p.Workload == WorkloadPetrou {
		return
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&p.NodeSlowFrac, m.NodeSlowFrac)
	set(&p.NodeSlowdown, m.NodeSlowdown)
	set(&p.NodeEpoch, m.NodeEpoch)
	set(&p.TaskSkew, m.TaskSkew)
	set(&p.ProgressEvery, m.ProgressEvery)
	set(&p.ProgressNoise, m.ProgressNoise)
	set(&p.Sched.SpecCap, m.SpecCap)
	set(&p.Sched.SlowTaskQuantile, m.SlowTaskQuantile)
}

// String describes m for report setups.
func (m StragglerModel) String() string {
	return fmt.Sprintf("slow workers %g%% (×%g, redrawn every %gs), skewed tasks %g%%, progress every %gs with noise σ=%g; LATE's cap %g%% of slots, slow-task quantile %g",
		100*m.NodeSlowFrac, m.NodeSlowdown, m.NodeEpoch, 100*m.TaskSkew, m.ProgressEvery, m.ProgressNoise, 100*m.SpecCap, m.SlowTaskQuantile)
}
