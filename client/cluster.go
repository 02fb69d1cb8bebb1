// The cluster view: queues, metrics, workers, pilots and pools.

package client

import (
	"context"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// Queues counts waiting and running work per class.
type Queues struct {
	Requested, Disclosed                              int64
	SuspendedCopies, RunningCopies, SpeculativeCopies int64
}

// Metrics are the server's live metrics (DESIGN.md §Metrics).
type Metrics struct {
	FinishedTasks              int64
	MeanVisibleResponseSeconds float64
	MeanVisibleSlowdown        float64
	TasksPerHour               float64
	Load                       float64
	BilledSlotSeconds          float64
	FreeSlotSeconds            float64
	Free                       sched.FreeWork // FreeSlotSeconds in its four parts
	SpeculativeCopiesStarted   int64
	SpeculativeCopiesWon       int64
	Beta                       float64
	BetaSamples                int64
	ScaledBilledResources      float64
	// LatencySeconds is the latency the scheduler adds to a copy's start
	// decision when it judges a running copy.
	LatencySeconds float64
}

// Cluster is the state of the whole service.
type Cluster struct {
	Workers                         []sched.Worker
	Slots, BusySlots                int32
	Queues                          Queues
	Metrics                         Metrics
	Policy, Speculation, Preemption string
	StartedAt                       time.Time
	Version                         string
	// Pilots of the elastic pools and the pools, as they last reported.
	Pilots []Pilot
	Pools  []Pool
	// FairShare says whether the requested class is split between users;
	// Users is each user's standing (sched.UserShare), by name.
	FairShare bool
	Users     []sched.UserShare
	// ShareUnisolated: the server lets workers without isolation run any
	// user's tasks (batchd serve --share-unisolated-workers).
	ShareUnisolated bool
}

// Pilot is a worker job an elastic pool keeps in a batch system.
type Pilot struct {
	Pool, ID, State, Reason, Node string
	Slots                         int32
	Worker, Partition, Class      string
	SubmittedAt, StartedAt        time.Time
}

// Pool is an elastic pool as it last reported.
type Pool struct {
	Name, Engine string
	ReportedAt   time.Time
	LastError    string
}

// GetCluster returns the live workers (up or lease-lapsed), slots,
// queues and live metrics.
func (c *Client) GetCluster(ctx context.Context) (Cluster, error) {
	return c.getCluster(ctx, &batchv1.GetClusterRequest{})
}

// GetClusterAllWorkers is GetCluster listing every worker ever
// registered, those that left (gone) too.
func (c *Client) GetClusterAllWorkers(ctx context.Context) (Cluster, error) {
	return c.getCluster(ctx, &batchv1.GetClusterRequest{AllWorkers: true})
}

func (c *Client) getCluster(ctx context.Context, req *batchv1.GetClusterRequest) (Cluster, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetClusterResponse, error) {
		return c.cluster().GetCluster(ctx, req)
	})
	if err != nil {
		return Cluster{}, err
	}
	q, m := res.GetQueues(), res.GetMetrics()
	out := Cluster{
		Slots:     res.GetSlots(),
		BusySlots: res.GetBusySlots(),
		Queues: Queues{
			Requested:         q.GetRequested(),
			Disclosed:         q.GetDisclosed(),
			SuspendedCopies:   q.GetSuspendedCopies(),
			RunningCopies:     q.GetRunningCopies(),
			SpeculativeCopies: q.GetSpeculativeCopies(),
		},
		Metrics: Metrics{
			FinishedTasks:              m.GetFinishedTasks(),
			MeanVisibleResponseSeconds: m.GetMeanVisibleResponseSeconds(),
			MeanVisibleSlowdown:        m.GetMeanVisibleSlowdown(),
			TasksPerHour:               m.GetTasksPerHour(),
			Load:                       m.GetLoad(),
			BilledSlotSeconds:          m.GetBilledSlotSeconds(),
			FreeSlotSeconds:            m.GetFreeSlotSeconds(),
			Free:                       freeWorkFromPB(m.GetFree()),
			SpeculativeCopiesStarted:   m.GetSpeculativeCopiesStarted(),
			SpeculativeCopiesWon:       m.GetSpeculativeCopiesWon(),
			Beta:                       m.GetBeta(),
			BetaSamples:                m.GetBetaSamples(),
			ScaledBilledResources:      m.GetScaledBilledResources(),
			LatencySeconds:             m.GetLatencySeconds(),
		},
		Policy:      res.GetPolicy(),
		Speculation: res.GetSpeculation(),
		Preemption:  res.GetPreemption(),
		StartedAt:   timeFromPB(res.GetStartedAt()),
		Version:     res.GetVersion(),
		FairShare:   res.GetFairShare(),

		ShareUnisolated: res.GetShareUnisolatedWorkers(),
	}
	for _, u := range res.GetUsers() {
		out.Users = append(out.Users, sched.UserShare{User: u.GetName(), Weight: u.GetWeight(), Held: int(u.GetHeld()), Queued: int(u.GetQueued()), Share: u.GetShare(), Usage: u.GetUsage()})
	}
	for _, w := range res.GetWorkers() {
		out.Workers = append(out.Workers, workerFromPB(w))
	}
	for _, p := range res.GetPilots() {
		out.Pilots = append(out.Pilots, Pilot{Pool: p.GetPool(), ID: p.GetId(), State: p.GetState(), Reason: p.GetReason(),
			Node: p.GetNode(), Slots: p.GetSlots(), Worker: p.GetWorker(), Partition: p.GetPartition(), Class: p.GetClass(),
			SubmittedAt: timeFromPB(p.GetSubmittedAt()), StartedAt: timeFromPB(p.GetStartedAt())})
	}
	for _, p := range res.GetPools() {
		out.Pools = append(out.Pools, Pool{Name: p.GetName(), Engine: p.GetEngine(), ReportedAt: timeFromPB(p.GetReportedAt()), LastError: p.GetLastError()})
	}
	return out, nil
}
