package sched

import (
	"slices"
	"strconv"
	"strings"
)

// This file holds retries in place: the retry policy of a set (a domain
// record the store, server and clients share) and the scheduler's side of
// a retry, a task of the set going back to its queue as a new attempt.

// RetryPolicy is a set's retry policy, applied by the server: a task whose
// attempt ends in a way the policy names runs again in place (same set,
// same index, next attempt), at most Retries times per task.
type RetryPolicy struct {
	// Retries is how many automatic retries each task gets (0: none).
	Retries int32
	// ExitCodes are the exit codes that are retried.
	ExitCodes []int32
	// NonZero retries any non-zero exit (that did not time out).
	NonZero bool
	// Timeout retries an attempt that ran out of its timeout.
	Timeout bool
	// Lost makes each re-run after a copy was lost with its worker a new
	// attempt, counted against Retries (the re-run itself happens with or
	// without a policy, and is free either way).
	Lost bool
}

// MaxRetries bounds RetryPolicy.Retries.
const MaxRetries = 100

// DefaultRetryOn is what --retry-on means when only --retries is given.
const DefaultRetryOn = "nonzero,timeout"

// ParseRetryOn reads a comma-separated list of exit codes (1-255) and the
// words nonzero, timeout and lost into p (Retries is left alone).
// Errors: EINVALID naming the bad item.
func ParseRetryOn(s string) (RetryPolicy, error) {
	var p RetryPolicy
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case "":
			continue
		case "nonzero":
			p.NonZero = true
		case "timeout":
			p.Timeout = true
		case "lost":
			p.Lost = true
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 255 {
				return p, Errorf(EINVALID, "retry-on %q: give exit codes 1 to 255, nonzero, timeout or lost, separated by commas", f)
			}
			if !slices.Contains(p.ExitCodes, int32(n)) {
				p.ExitCodes = append(p.ExitCodes, int32(n))
			}
		}
	}
	slices.Sort(p.ExitCodes)
	return p, nil
}

// RetryOn is the policy's conditions in ParseRetryOn's form ("" when none).
func (p RetryPolicy) RetryOn() string {
	var parts []string
	for _, c := range p.ExitCodes {
		parts = append(parts, strconv.Itoa(int(c)))
	}
	if p.NonZero {
		parts = append(parts, "nonzero")
	}
	if p.Timeout {
		parts = append(parts, "timeout")
	}
	if p.Lost {
		parts = append(parts, "lost")
	}
	return strings.Join(parts, ",")
}

// Validate checks the bounds of p. Errors: EINVALID.
func (p RetryPolicy) Validate() error {
	if p.Retries < 0 || p.Retries > MaxRetries {
		return Errorf(EINVALID, "retries %d: give 0 to %d", p.Retries, MaxRetries)
	}
	for _, c := range p.ExitCodes {
		if c < 1 || c > 255 {
			return Errorf(EINVALID, "retry-on exit code %d: give 1 to 255", c)
		}
	}
	if p.Retries > 0 && p.RetryOn() == "" {
		return Errorf(EINVALID, "retries %d with nothing to retry on: give --retry-on (exit codes, nonzero, timeout, lost)", p.Retries)
	}
	return nil
}

// RetriesExit reports whether an attempt that ended with exit code exit
// (timedOut: ran out of its timeout) is one the policy retries, budget
// aside.
func (p RetryPolicy) RetriesExit(exit int32, timedOut bool) bool {
	if timedOut {
		return p.Timeout
	}
	if exit == 0 {
		return false
	}
	return p.NonZero || slices.Contains(p.ExitCodes, exit)
}

// Retryable reports whether a task in state st that ended with exit code
// exit (timedOut) may be retried by its user: it failed (finished or
// executed with a non-zero exit, or timed out) or was canceled.
func Retryable(st TaskState, exit int32, timedOut bool) bool {
	switch st {
	case TaskCanceled:
		return true
	case TaskFinished, TaskExecuted:
		return exit != 0 || timedOut
	}
	return false
}

// RetryClass is the state a retried task goes back to: a task that was
// requested (finished, or canceled after its request) is requested again,
// any other disclosed, so that a retry keeps the task's class.
func RetryClass(st TaskState, wasRequested bool) TaskState {
	if st == TaskFinished || (st == TaskCanceled && wasRequested) {
		return TaskRequested
	}
	return TaskDisclosed
}

// retried puts tasks that needed no run back in their queue as new
// attempts: ev.Tasks name them and the state each goes back to
// (TaskRequested or TaskDisclosed) with RequestedAt. A retried task has no
// live copy (a done task's copies were ended when it finished or was
// canceled), so it queues as a task never run; O(log n) a task. A task the
// scheduler no longer holds (its set was closed and forgotten, or the
// server restarted since it ended) is queued anew from its TaskInfo, in
// a set made anew for ev.Owner when needed. TaskInfo.Held keeps a held
// task held.
func (s *Scheduler) retried(ev Event) error {
	st := s.sets[ev.Set]
	ts := make([]*task, len(ev.Tasks))
	var fresh []TaskInfo
	for i, ti := range ev.Tasks {
		if ti.State != TaskRequested && ti.State != TaskDisclosed {
			return Errorf(EINVALID, "retry: task %d of set %d cannot go back to %q", ti.Index, ev.Set, ti.State)
		}
		var t *task
		if st != nil {
			t = st.task(ti.Index)
		}
		if t == nil {
			fresh = append(fresh, ti)
			continue
		}
		if !t.done() || len(t.copies) > 0 {
			return Errorf(EFAILEDPRECONDITION, "retry: task %d of set %d is still %s", ti.Index, ev.Set, toTaskState(t.state))
		}
		ts[i] = t
	}
	if len(fresh) > 0 {
		if st == nil && ev.Owner == "" {
			return Errorf(EINVALID, "retry: task set %d is not held and the event names no owner", ev.Set)
		}
		owner := ev.Owner
		if st != nil {
			owner = st.owner
		}
		if err := s.disclosed(Event{Kind: EventDisclosed, Time: ev.Time, Set: ev.Set, Owner: owner, Tasks: fresh, Route: ev.Route}); err != nil {
			return err
		}
	}
	for i, ti := range ev.Tasks {
		t := ts[i]
		if t == nil {
			continue // queued anew above
		}
		t.lost = false
		t.held = ti.Held // done: in no queue or job yet, setState places it
		ns := stDisclosed
		if ti.State == TaskRequested {
			ns = stRequested
			t.requestedAt = ti.RequestedAt
			if t.requestedAt == 0 {
				t.requestedAt = ev.Time
			}
		}
		s.setState(t, ns, ev.Time)
	}
	return nil
}
