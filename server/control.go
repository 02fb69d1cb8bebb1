package server

import (
	"context"
	"errors"
	"slices"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// controlHandler serves TaskSetControlService: hold and release tasks,
// and change a set in place. Each call writes the store and tells the
// scheduler in the API lane, as Cancel does.
type controlHandler struct{ s *Server }

// HoldTasks holds the named tasks (or all that need a run); with suspend,
// the scheduler suspends their running copies at its next decision.
func (h controlHandler) HoldTasks(ctx context.Context, req *batchv1.HoldTasksRequest) (*batchv1.HoldTasksResponse, error) {
	res, suspended, err := h.setHeld(ctx, req.SetId, req.Indexes, req.All, true, req.Suspend)
	if err != nil {
		return nil, err
	}
	return &batchv1.HoldTasksResponse{TaskSet: setToProto(res.Set), Held: res.Changed, Unchanged: res.Unchanged, Suspended: int32(suspended)}, nil
}

// ReleaseTasks releases held tasks.
func (h controlHandler) ReleaseTasks(ctx context.Context, req *batchv1.ReleaseTasksRequest) (*batchv1.ReleaseTasksResponse, error) {
	res, _, err := h.setHeld(ctx, req.SetId, req.Indexes, req.All, false, false)
	if err != nil {
		return nil, err
	}
	return &batchv1.ReleaseTasksResponse{TaskSet: setToProto(res.Set), Released: res.Changed, Unchanged: res.Unchanged}, nil
}

func (h controlHandler) setHeld(ctx context.Context, setID int64, indexes []int32, all, held, suspend bool) (store.HoldResult, int, error) {
	s := h.s
	var res store.HoldResult
	if len(indexes) > store.MaxIndexesPerCall {
		return res, 0, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(indexes), store.MaxIndexesPerCall)
	}
	if err := sched.CheckNamedOrAll(len(indexes), all); err != nil {
		return res, 0, err
	}
	if err := errors.Join(checkSetID("set_id", setID), checkIndexes(indexes)); err != nil {
		return res, 0, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(setID))
	if err != nil {
		return res, 0, err
	}
	suspended := 0
	s.apiWrite(func() {
		in := store.HoldInput{Owner: owner, SetID: sched.SetID(setID), Indexes: indexes, All: all}
		if held {
			res, err = s.db.Hold(ctx, in)
		} else {
			res, err = s.db.Release(ctx, in)
		}
		if err != nil {
			return
		}
		kind := sched.EventReleased
		if held {
			kind = sched.EventHeld
		}
		// A hold with suspend reaches copies of tasks held before too.
		if res.Changed > 0 || (suspend && res.Set.Counts.Held > 0) {
			ev := sched.Event{Kind: kind, Time: seconds(s.now()), Set: sched.SetID(setID), Indexes: res.Indexes, Suspend: suspend}
			if !all {
				ev.Indexes = dedup(indexes)
			}
			suspended = s.apply(ev).Suspended
		}
		s.watch.publish(sched.SetID(setID), res.Indexes)
	})
	return res, suspended, err
}

// dedup returns idx without repeats, in first-seen order (never nil).
func dedup(idx []int32) []int32 {
	seen := make(map[int32]bool, len(idx))
	out := make([]int32, 0, len(idx))
	for _, i := range idx {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// UpdateTaskSet changes a set's cap, timeout, retry policy or stop rule
// in place.
func (h controlHandler) UpdateTaskSet(ctx context.Context, req *batchv1.UpdateTaskSetRequest) (*batchv1.UpdateTaskSetResponse, error) {
	s := h.s
	if err := checkSetID("set_id", req.SetId); err != nil {
		return nil, err
	}
	in := store.UpdateInput{SetID: sched.SetID(req.SetId), MaxRunning: req.MaxRunning, TimeoutSeconds: req.TimeoutSeconds}
	if req.Retry != nil {
		p := retryFromProto(req.Retry)
		in.Retry = &p
	}
	if req.Stop != nil {
		r := stopFromProto(req.Stop)
		in.Stop = &r
	}
	owner, err := s.ownerFor(ctx, in.SetID)
	if err != nil {
		return nil, err
	}
	in.Owner = owner
	var set sched.TaskSet
	s.apiWrite(func() {
		if set, err = s.db.UpdateSet(ctx, in); err != nil {
			return
		}
		if in.MaxRunning != nil {
			n := *in.MaxRunning
			if n == 0 {
				n = sched.NoMaxRunning
			}
			s.apply(sched.Event{Kind: sched.EventDisclosed, Time: seconds(s.now()), Set: in.SetID, Owner: owner, MaxRunning: n})
		}
		s.watch.publish(in.SetID, nil)
	})
	if err != nil {
		return nil, err
	}
	return &batchv1.UpdateTaskSetResponse{TaskSet: setToProto(set)}, nil
}

func stopToProto(r sched.StopRule) *batchv1.StopRule {
	if r.IsZero() {
		return nil
	}
	return &batchv1.StopRule{OnSuccess: r.OnSuccess, OnExit: r.OnExit, OnOutput: r.OnOutput, After: r.After}
}

func stopFromProto(p *batchv1.StopRule) sched.StopRule {
	if p == nil {
		return sched.StopRule{}
	}
	r := sched.StopRule{OnSuccess: p.OnSuccess, OnOutput: p.OnOutput, After: p.After}
	if len(p.OnExit) > 0 {
		r.OnExit = slices.Compact(slices.Sorted(slices.Values(p.OnExit)))
	}
	return r
}

func stopFiredToProto(f *sched.StopFired) *batchv1.StopFired {
	if f == nil {
		return nil
	}
	return &batchv1.StopFired{Index: f.Task.Index, Attempt: f.Attempt, At: ts(f.At), Why: f.Why, Canceled: f.Canceled}
}
