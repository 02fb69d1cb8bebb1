package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// ListSetsInput selects task sets for ListSets; zero fields select
// everything.
type ListSetsInput struct {
	// Owner lists another user's sets (admins); AllOwners every user's.
	Owner     string
	AllOwners bool
	// NameGlob matches set names (*, ?, [...]; case-sensitive).
	NameGlob string
	States   []sched.SetState
	// Since and Until bound the sets' creation time (zero: no bound);
	// with IncludeOpen, sets created before Since that are still open
	// (waiting, queued, running) are listed too.
	Since, Until time.Time
	IncludeOpen  bool
	Labels       []sched.Label
	PageSize     int32
	PageToken    string
}

// ListSets returns a page of the task sets in selects, newest first.
// Errors: EINVALID (a bad filter), EPERMISSION (another user's sets
// without an admin token).
func (c *Client) ListSets(ctx context.Context, in ListSetsInput) (TaskSetList, error) {
	req := &batchv1.ListTaskSetsRequest{PageSize: in.PageSize, PageToken: in.PageToken, AllOwners: in.AllOwners, Owner: in.Owner,
		NameGlob: in.NameGlob, Labels: labelsToPB(in.Labels), IncludeOpen: in.IncludeOpen}
	for _, st := range in.States {
		req.States = append(req.States, setStateToPB[st])
	}
	if !in.Since.IsZero() {
		req.Since = timestamppb.New(in.Since)
	}
	if !in.Until.IsZero() {
		req.Until = timestamppb.New(in.Until)
	}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.ListTaskSetsResponse, error) {
		return c.sets().ListTaskSets(ctx, req)
	})
	if err != nil {
		return TaskSetList{}, err
	}
	out := TaskSetList{NextPageToken: res.GetNextPageToken()}
	for _, s := range res.GetTaskSets() {
		out.Sets = append(out.Sets, setFromPB(s))
	}
	return out, nil
}

var setStateToPB = map[sched.SetState]batchv1.SetState{
	sched.SetWaiting:  batchv1.SetState_SET_STATE_WAITING,
	sched.SetQueued:   batchv1.SetState_SET_STATE_QUEUED,
	sched.SetRunning:  batchv1.SetState_SET_STATE_RUNNING,
	sched.SetDone:     batchv1.SetState_SET_STATE_DONE,
	sched.SetFailed:   batchv1.SetState_SET_STATE_FAILED,
	sched.SetCanceled: batchv1.SetState_SET_STATE_CANCELED,
}

func setStateFromPB(p batchv1.SetState) sched.SetState {
	for _, st := range sched.SetStates {
		if setStateToPB[st] == p {
			return st
		}
	}
	return ""
}

func depsToPB(deps []sched.Dependency) []*batchv1.Dependency {
	var out []*batchv1.Dependency
	for _, d := range deps {
		p := &batchv1.Dependency{SetId: int64(d.Set), AnyOutcome: d.Any}
		if d.Index != sched.WholeSet {
			i := d.Index
			p.Index = &i
		}
		out = append(out, p)
	}
	return out
}

func depsFromPB(ps []*batchv1.Dependency) []sched.Dependency {
	var out []sched.Dependency
	for _, p := range ps {
		d := sched.Dependency{Set: sched.SetID(p.GetSetId()), Index: sched.WholeSet, Any: p.GetAnyOutcome()}
		if p.Index != nil {
			d.Index = p.GetIndex()
		}
		out = append(out, d)
	}
	return out
}

func labelsToPB(ls []sched.Label) []*batchv1.Label {
	var out []*batchv1.Label
	for _, l := range ls {
		out = append(out, &batchv1.Label{Key: l.Key, Value: l.Value})
	}
	return out
}

func labelsFromPB(ps []*batchv1.Label) []sched.Label {
	var out []sched.Label
	for _, p := range ps {
		out = append(out, sched.Label{Key: p.GetKey(), Value: p.GetValue()})
	}
	return out
}
