package client

import (
	"context"
	"slices"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// HoldResult is the server's answer to Hold or Release.
type HoldResult struct {
	Set sched.TaskSet
	// Changed counts the tasks held (or released) by the call; Unchanged
	// those that were already, or need no run.
	Changed, Unchanged int32
	// Suspended counts the running copies a hold suspended.
	Suspended int32
}

// HoldInput names tasks of a set: Indexes, or All (every task that needs
// a run).
type HoldInput struct {
	Set     sched.SetID
	Indexes []int32
	All     bool
	// Suspend suspends the held tasks' running copies (Hold only).
	Suspend bool
}

// Hold keeps tasks from starting until released; their running copies go
// on, or are suspended with Suspend. Holding a held task again changes
// nothing, so a retried call is harmless. Errors: EINVALID (nothing
// named, or tasks and All), ENOTFOUND (no such set or task).
func (c *Client) Hold(ctx context.Context, in HoldInput) (HoldResult, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.HoldTasksResponse, error) {
		return c.control().HoldTasks(ctx, &batchv1.HoldTasksRequest{SetId: int64(in.Set), Indexes: in.Indexes, All: in.All, Suspend: in.Suspend})
	})
	if err != nil {
		return HoldResult{}, err
	}
	return HoldResult{Set: setFromPB(res.GetTaskSet()), Changed: res.GetHeld(), Unchanged: res.GetUnchanged(), Suspended: res.GetSuspended()}, nil
}

// Release undoes Hold for the named tasks (or All held ones).
func (c *Client) Release(ctx context.Context, in HoldInput) (HoldResult, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.ReleaseTasksResponse, error) {
		return c.control().ReleaseTasks(ctx, &batchv1.ReleaseTasksRequest{SetId: int64(in.Set), Indexes: in.Indexes, All: in.All})
	})
	if err != nil {
		return HoldResult{}, err
	}
	return HoldResult{Set: setFromPB(res.GetTaskSet()), Changed: res.GetReleased(), Unchanged: res.GetUnchanged()}, nil
}

// UpdateInput changes a set in place; a nil field leaves its part as it is.
type UpdateInput struct {
	Set sched.SetID
	// MaxRunning is the new cap (0: none).
	MaxRunning *int32
	// TimeoutSeconds replaces the tasks' own timeouts for copies started
	// from now on (0: each task's own again).
	TimeoutSeconds *float64
	Retry          *sched.RetryPolicy
	// Stop is the new stop rule (a zero rule removes it).
	Stop *sched.StopRule
}

// Update changes a set's cap, timeout, retry policy or stop rule in place.
// Errors: EINVALID (nothing to change, or a bad value), ENOTFOUND.
func (c *Client) Update(ctx context.Context, in UpdateInput) (sched.TaskSet, error) {
	req := &batchv1.UpdateTaskSetRequest{SetId: int64(in.Set), MaxRunning: in.MaxRunning, TimeoutSeconds: in.TimeoutSeconds}
	if in.Retry != nil {
		req.Retry = retryToPB(*in.Retry)
		if req.Retry == nil {
			req.Retry = &batchv1.RetryPolicy{} // no retries: still a change
		}
	}
	if in.Stop != nil {
		req.Stop = stopToPB(*in.Stop)
		if req.Stop == nil {
			req.Stop = &batchv1.StopRule{} // remove the rule
		}
	}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.UpdateTaskSetResponse, error) {
		return c.control().UpdateTaskSet(ctx, req)
	})
	if err != nil {
		return sched.TaskSet{}, err
	}
	return setFromPB(res.GetTaskSet()), nil
}

func stopToPB(r sched.StopRule) *batchv1.StopRule {
	if r.IsZero() {
		return nil
	}
	return &batchv1.StopRule{OnSuccess: r.OnSuccess, OnExit: r.OnExit, OnOutput: r.OnOutput, After: r.After}
}

func stopFromPB(p *batchv1.StopRule) sched.StopRule {
	if p == nil {
		return sched.StopRule{}
	}
	r := sched.StopRule{OnSuccess: p.GetOnSuccess(), OnOutput: p.GetOnOutput(), After: p.GetAfter()}
	if len(p.GetOnExit()) > 0 {
		r.OnExit = slices.Clone(p.GetOnExit())
	}
	return r
}

func stopFiredFromPB(set sched.SetID, p *batchv1.StopFired) *sched.StopFired {
	if p == nil {
		return nil
	}
	return &sched.StopFired{Task: sched.TaskRef{Set: set, Index: p.GetIndex()}, Attempt: p.GetAttempt(), At: timeFromPB(p.GetAt()),
		Why: p.GetWhy(), Canceled: p.GetCanceled()}
}
