package server

import (
	"context"
	"errors"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// maxWhyIndexes bounds the tasks one Why call explains: each answer holds
// the server's lock for a few microseconds (sched.BenchmarkWhy).
const maxWhyIndexes = 1000

var whyReasonToProto = map[sched.WhyReason]batchv1.WaitReason{
	sched.WhyRunning:          batchv1.WaitReason_WAIT_REASON_RUNNING,
	sched.WhyNotWaiting:       batchv1.WaitReason_WAIT_REASON_NOT_WAITING,
	sched.WhyNext:             batchv1.WaitReason_WAIT_REASON_NEXT,
	sched.WhyNoFreeSlot:       batchv1.WaitReason_WAIT_REASON_NO_FREE_SLOT,
	sched.WhyCapped:           batchv1.WaitReason_WAIT_REASON_MAX_RUNNING,
	sched.WhyDisclosedWaits:   batchv1.WaitReason_WAIT_REASON_DISCLOSED_WAITS_FOR_IDLE_SLOTS,
	sched.WhySuspended:        batchv1.WaitReason_WAIT_REASON_SUSPENDED_FOR_REQUESTED_WORK,
	sched.WhyWorkerLost:       batchv1.WaitReason_WAIT_REASON_WORKER_LOST_REQUEUED,
	sched.WhyResources:        batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES,
	sched.WhyNoWorker:         batchv1.WaitReason_WAIT_REASON_NO_WORKER_UP,
	sched.WhyNeverFits:        batchv1.WaitReason_WAIT_REASON_NO_WORKER_FITS,
	sched.WhyFairShare:        batchv1.WaitReason_WAIT_REASON_FAIR_SHARE,
	sched.WhyNoWorkerForOwner: batchv1.WaitReason_WAIT_REASON_NO_WORKER_FOR_OWNER,
	sched.WhyHeld:             batchv1.WaitReason_WAIT_REASON_HELD,
	sched.WhyDependency:       batchv1.WaitReason_WAIT_REASON_WAITING_FOR_DEPENDENCY,
	sched.WhyNoTimeLeft:       batchv1.WaitReason_WAIT_REASON_NO_WORKER_TIME_LEFT,
	sched.WhyRoute:            batchv1.WaitReason_WAIT_REASON_WAITING_FOR_POOL,
}

// Why explains why the named tasks wait, from the scheduler's state. The
// store answers which tasks exist and are the caller's (ENOTFOUND
// otherwise); the scheduler answers for the tasks that still need a run,
// in the API lane, so that a burst of Why calls waits its turn like any
// write and dispatch is never queued behind it.
func (h taskSetHandler) Why(ctx context.Context, req *batchv1.WhyRequest) (*batchv1.WhyResponse, error) {
	s := h.s
	if len(req.Indexes) == 0 {
		return nil, sched.Errorf(sched.EINVALID, "name at least one task")
	}
	if len(req.Indexes) > maxWhyIndexes {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(req.Indexes), maxWhyIndexes)
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	id := sched.SetID(req.SetId)
	set, tasks, err := s.db.GetTasks(ctx, owner, id, req.Indexes)
	if err != nil {
		return nil, err
	}
	byIndex := make(map[int32]sched.Task, len(tasks))
	for _, t := range tasks {
		byIndex[t.Index] = t
	}
	for _, i := range req.Indexes {
		if _, ok := byIndex[i]; !ok {
			return nil, sched.Errorf(sched.ENOTFOUND, "task %d of set %d not found (the set has %d tasks)", i, id, set.Counts.Total)
		}
	}
	depDetail := ""
	if set.Waiting {
		deps, waiting, err := s.db.GetDependencies(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		if waiting {
			depDetail = dependencyDetail(deps)
		}
	}
	out := &batchv1.WhyResponse{Tasks: make([]*batchv1.TaskWhy, len(req.Indexes))}
	s.apiWrite(func() {
		now := seconds(s.now())
		for k, i := range req.Indexes {
			t := byIndex[i]
			a, err := s.sched.Why(sched.TaskRef{Set: id, Index: i}, now)
			if err != nil || t.State.Final() {
				// Final tasks leave the scheduler at a restart; the store's
				// state is the answer.
				a = sched.WhyAnswer{Task: sched.TaskRef{Set: id, Index: i}, Reason: sched.WhyNotWaiting, Exact: true, PositionExact: true, AheadExact: true,
					StartInSeconds: -1, FinishInSeconds: -1, MaxRunning: int(set.MaxRunning)}
			}
			if a.Reason == sched.WhyNeverFits && s.poolCapacity().Holds(sched.Need{Cpus: t.Spec.Cpus, MemMB: t.Spec.MemoryMB, GPUs: t.Spec.GPUs}) {
				// No worker up fits it, but a pool can start a pilot that does.
				a.Reason, a.Detail = sched.WhyResources, sched.PoolGPUDetail(t.Spec.GPUs, a.Detail)
			}
			if a.Reason == sched.WhyDependency && depDetail != "" {
				a.Detail = depDetail
			}
			a.State = t.State
			if t.FailReason != "" && t.State == sched.TaskCanceled {
				a.Detail = "failed: " + t.FailReason
			}
			out.Tasks[k] = whyToProto(a)
		}
	})
	return out, nil
}

func whyToProto(a sched.WhyAnswer) *batchv1.TaskWhy {
	return &batchv1.TaskWhy{Index: a.Task.Index, State: taskStateToProto[a.State], Class: a.Class,
		Reason: whyReasonToProto[a.Reason], ReasonText: whyText(a), Position: int32(a.Position), JobsAhead: int32(a.JobsAhead),
		TasksAhead: int64(a.TasksAhead), Exact: a.Exact, FreeSlots: int32(a.FreeSlots), Slots: int32(a.Slots),
		MaxRunning: int32(a.MaxRunning), Running: int32(a.Running), StartInSeconds: a.StartInSeconds,
		FinishInSeconds: a.FinishInSeconds, Assumptions: a.Assumptions,
		PositionExact: a.PositionExact, TasksAheadExact: a.AheadExact, StartIsLowerBound: a.StartLowerBound,
		FinishIsLowerBound: a.FinishLowerBound, PastEstimate: a.PastEstimate}
}

// whyText is an answer's reason for people: its Detail where it has one.
func whyText(a sched.WhyAnswer) string {
	if a.Detail != "" {
		return a.Detail
	}
	return a.Reason.Text()
}
