package sched

// This file names where a task set stands as a whole, for people and for
// finding sets (`batchctl ls --state`), and a set's labels.

// SetState is where a task set stands as a whole, in Slurm's terms.
type SetState string

const (
	// SetWaiting: the set waits for the sets or tasks it depends on
	// (PENDING, reason Dependency, in Slurm). Left by the dependency pass
	// (to queued or running, or canceled).
	SetWaiting SetState = "waiting"
	// SetQueued: tasks are left to run and none runs now (PENDING).
	SetQueued SetState = "queued"
	// SetRunning: a copy of one of its tasks runs (RUNNING).
	SetRunning SetState = "running"
	// SetDone: ended (SetOutcome OutcomeOK; COMPLETED).
	SetDone SetState = "done"
	// SetFailed: ended, and a requested task failed (FAILED).
	SetFailed SetState = "failed"
	// SetCanceled: ended with nothing run to a result (CANCELLED).
	SetCanceled SetState = "canceled"
)

// SetStates lists the set states in the order a set passes through them.
var SetStates = []SetState{SetWaiting, SetQueued, SetRunning, SetDone, SetFailed, SetCanceled}

// Valid reports whether s is one of SetStates.
func (s SetState) Valid() bool {
	for _, v := range SetStates {
		if s == v {
			return true
		}
	}
	return false
}

// Ended reports whether a set in state s has ended (no task of it can run
// any more).
func (s SetState) Ended() bool { return s == SetDone || s == SetFailed || s == SetCanceled }

// SetStateOf says where a set with counts c stands: failed counts its
// requested tasks that failed (SetOutcome), waiting says it waits for its
// dependencies.
func SetStateOf(c TaskCounts, failed int64, waiting bool) SetState {
	switch SetOutcome(c, failed) {
	case OutcomeOK:
		return SetDone
	case OutcomeFailed:
		return SetFailed
	case OutcomeCanceled:
		return SetCanceled
	}
	switch {
	case waiting:
		return SetWaiting
	case c.Running > 0:
		return SetRunning
	}
	return SetQueued
}

// Label is one key=value label a set was disclosed with.
type Label struct {
	Key, Value string
}
