package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// This file drives set dependencies (disclose --after): after tasks end,
// the store's dependency pass releases or cancels the sets that wait on
// them, and the scheduler hears of it. Only sets some waiting set waits
// on (sched.HasDependents) start a pass, so that the rest cost nothing.

// resolveDeps runs the dependency pass for the waiting sets that wait on
// the sets in changed (nil: every waiting set) and tells the scheduler
// and the watchers what it did. It reports whether a set was released or
// canceled (the caller then decides). A pass that fails is logged and
// left: the sets go on waiting until the next change of what they wait
// on, or the next start. Call with mu held.
func (s *Server) resolveDeps(ctx context.Context, now time.Time, changed []sched.SetID) bool {
	return s.resolveDepsOf(ctx, now, changed, 0)
}

// resolveDepsOf is resolveDeps, with set self in the pass (when not 0)
// whether or not a set waits on it: a waiting set whose tasks a cancel
// ended waits no more.
func (s *Server) resolveDepsOf(ctx context.Context, now time.Time, changed []sched.SetID, self sched.SetID) bool {
	if changed != nil {
		n := 0
		for _, id := range changed {
			if s.sched.HasDependents(id) || id == self {
				changed[n] = id
				n++
			}
		}
		if changed = changed[:n]; n == 0 {
			return false
		}
	} else if len(s.sched.WaitingSets()) == 0 {
		return false
	}
	res, err := s.db.ResolveDependencies(ctx, changed)
	if err != nil {
		s.log.Error("dependency pass", "err", err.Error())
		return false
	}
	for _, r := range res {
		if r.Verdict == sched.VerdictRelease {
			s.apply(sched.Event{Kind: sched.EventWaitEnded, Time: seconds(now), Set: r.Set})
			s.log.Info("set released: its dependencies ended", "set", r.Set)
			s.watch.publish(r.Set, nil)
			continue
		}
		if len(r.Canceled) > 0 {
			s.apply(sched.Event{Kind: sched.EventCanceled, Time: seconds(now), Set: r.Set, Indexes: r.Canceled})
		}
		// A set all of whose tasks were canceled while it waited is no
		// longer held by the scheduler (nothing was left to cancel).
		s.apply(sched.Event{Kind: sched.EventWaitEnded, Time: seconds(now), Set: r.Set})
		s.log.Info("set canceled: a dependency did not succeed", "set", r.Set, "reason", r.Reason)
		s.watch.publish(r.Set, nil)
	}
	return len(res) > 0
}

// endedSets appends set to sets once (the sets whose tasks a batch
// ended).
func endedSets(sets []sched.SetID, set sched.SetID) []sched.SetID {
	for _, s := range sets {
		if s == set {
			return sets
		}
	}
	return append(sets, set)
}

// depsFromProto converts a disclose's dependencies (EINVALID for a bad
// list).
func depsFromProto(ps []*batchv1.Dependency) ([]sched.Dependency, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	deps := make([]sched.Dependency, len(ps))
	for i, p := range ps {
		deps[i] = sched.Dependency{Set: sched.SetID(p.SetId), Index: sched.WholeSet, Any: p.AnyOutcome}
		if p.Index != nil {
			if *p.Index < 0 {
				return nil, sched.Errorf(sched.EINVALID, "dependency on task %d of set %d: bad index", *p.Index, p.SetId)
			}
			deps[i].Index = *p.Index
		}
	}
	return deps, sched.CheckDependencies(deps)
}

func depsToProto(deps []sched.Dependency) []*batchv1.Dependency {
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

func labelsFromProto(ps []*batchv1.Label) ([]store.Label, error) {
	var ls []store.Label
	for _, p := range ps {
		ls = append(ls, store.Label{Key: p.Key, Value: p.Value})
	}
	store.SortLabels(ls)
	return ls, store.CheckLabels(ls)
}

func labelsToProto(ls []sched.Label) []*batchv1.Label {
	var out []*batchv1.Label
	for _, l := range ls {
		out = append(out, &batchv1.Label{Key: l.Key, Value: l.Value})
	}
	return out
}

var setStateToProto = map[sched.SetState]batchv1.SetState{
	sched.SetWaiting:  batchv1.SetState_SET_STATE_WAITING,
	sched.SetQueued:   batchv1.SetState_SET_STATE_QUEUED,
	sched.SetRunning:  batchv1.SetState_SET_STATE_RUNNING,
	sched.SetDone:     batchv1.SetState_SET_STATE_DONE,
	sched.SetFailed:   batchv1.SetState_SET_STATE_FAILED,
	sched.SetCanceled: batchv1.SetState_SET_STATE_CANCELED,
}

func setStatesFromProto(ps []batchv1.SetState) ([]sched.SetState, error) {
	var out []sched.SetState
	for _, p := range ps {
		found := false
		for st, q := range setStateToProto {
			if q == p {
				out, found = append(out, st), true
			}
		}
		if !found {
			return nil, sched.Errorf(sched.EINVALID, "unknown set state %d", p)
		}
	}
	return out, nil
}

// dependencyDetail is why's sentence for a task of a waiting set: what
// the set waits for and what is left of it ("waiting for set 12: 3 of 40
// left").
func dependencyDetail(deps []store.DepStatus) string {
	var parts []string
	for _, d := range deps {
		if d.Outcome != sched.OutcomePending {
			continue
		}
		p := "waiting for " + d.Subject()
		if d.Index == sched.WholeSet {
			p += fmt.Sprintf(": %d of %d left", d.Left, d.Total)
		}
		if d.Any {
			p += " (any outcome)"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "waiting for its dependencies: they ended; it is released at once"
	}
	return strings.Join(parts, "; ")
}
