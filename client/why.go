package client

import (
	"context"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// MaxWhyIndexes is the most tasks one Why call to the server explains.
const MaxWhyIndexes = 1000

var whyReasons = map[batchv1.WaitReason]sched.WhyReason{
	batchv1.WaitReason_WAIT_REASON_RUNNING:                        sched.WhyRunning,
	batchv1.WaitReason_WAIT_REASON_NOT_WAITING:                    sched.WhyNotWaiting,
	batchv1.WaitReason_WAIT_REASON_NEXT:                           sched.WhyNext,
	batchv1.WaitReason_WAIT_REASON_NO_FREE_SLOT:                   sched.WhyNoFreeSlot,
	batchv1.WaitReason_WAIT_REASON_MAX_RUNNING:                    sched.WhyCapped,
	batchv1.WaitReason_WAIT_REASON_DISCLOSED_WAITS_FOR_IDLE_SLOTS: sched.WhyDisclosedWaits,
	batchv1.WaitReason_WAIT_REASON_SUSPENDED_FOR_REQUESTED_WORK:   sched.WhySuspended,
	batchv1.WaitReason_WAIT_REASON_WORKER_LOST_REQUEUED:           sched.WhyWorkerLost,
	batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES:          sched.WhyResources,
	batchv1.WaitReason_WAIT_REASON_NO_WORKER_UP:                   sched.WhyNoWorker,
	batchv1.WaitReason_WAIT_REASON_NO_WORKER_FITS:                 sched.WhyNeverFits,
	batchv1.WaitReason_WAIT_REASON_FAIR_SHARE:                     sched.WhyFairShare,
	batchv1.WaitReason_WAIT_REASON_NO_WORKER_FOR_OWNER:            sched.WhyNoWorkerForOwner,
	batchv1.WaitReason_WAIT_REASON_HELD:                           sched.WhyHeld,
	batchv1.WaitReason_WAIT_REASON_WAITING_FOR_DEPENDENCY:         sched.WhyDependency,
}

// Why asks the scheduler why the named tasks of set wait, in calls of at
// most MaxWhyIndexes tasks; the answers come in the order of indexes.
// Errors: EINVALID (no index), ENOTFOUND (no such set or task).
func (c *Client) Why(ctx context.Context, set sched.SetID, indexes []int32) ([]sched.WhyAnswer, error) {
	if len(indexes) == 0 {
		return nil, sched.Errorf(sched.EINVALID, "why: name at least one task")
	}
	out := make([]sched.WhyAnswer, 0, len(indexes))
	for start := 0; start < len(indexes); start += MaxWhyIndexes {
		req := &batchv1.WhyRequest{SetId: int64(set), Indexes: indexes[start:min(len(indexes), start+MaxWhyIndexes)]}
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.WhyResponse, error) {
			return c.sets().Why(ctx, req)
		})
		if err != nil {
			return nil, err
		}
		for _, w := range res.GetTasks() {
			a := sched.WhyAnswer{
				Task: sched.TaskRef{Set: set, Index: w.GetIndex()}, State: taskStateFromPB(w.GetState()), Class: w.GetClass(),
				Reason: whyReasons[w.GetReason()], Position: int(w.GetPosition()), JobsAhead: int(w.GetJobsAhead()),
				TasksAhead: int(w.GetTasksAhead()), Exact: w.GetExact(), FreeSlots: int(w.GetFreeSlots()), Slots: int(w.GetSlots()),
				MaxRunning: int(w.GetMaxRunning()), Running: int(w.GetRunning()), StartInSeconds: w.GetStartInSeconds(),
				FinishInSeconds: w.GetFinishInSeconds(), Assumptions: w.GetAssumptions(),
				PositionExact: w.GetPositionExact(), AheadExact: w.GetTasksAheadExact(), StartLowerBound: w.GetStartIsLowerBound(),
				FinishLowerBound: w.GetFinishIsLowerBound(), PastEstimate: w.GetPastEstimate(),
			}
			if a.Reason.Text() != w.GetReasonText() {
				a.Detail = w.GetReasonText()
			}
			out = append(out, a)
		}
	}
	return out, nil
}
