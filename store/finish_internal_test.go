package store

import (
	"testing"

	"batchd/sched"
)

// classifyEnd names each way a report of a copy's end can go, in the order
// its cases are checked.
func TestClassifyEnd(t *testing.T) {
	t.Parallel()
	row := func(copyState sched.CopyState, copyAttempt int32, task sched.TaskState, taskAttempt int32) endRow {
		return endRow{copy: sched.Copy{State: copyState, Attempt: copyAttempt}, taskState: task, taskAttempt: taskAttempt}
	}
	tests := []struct {
		name   string
		row    endRow
		killed bool
		want   endOutcome
	}{
		{"ReplayedWon", endRow{outcome: "won", copy: sched.Copy{State: sched.CopyWon}, taskState: sched.TaskFinished}, false, endReplayed},
		{"ReplayedDiscarded", endRow{outcome: "discarded", copy: sched.Copy{State: sched.CopyRunning}, taskState: sched.TaskRequested}, false, endReplayed},
		{"WonLateRequested", row(sched.CopyLost, 0, sched.TaskRequested, 0), false, endWonLate},
		{"WonLateDisclosed", row(sched.CopyLost, 0, sched.TaskDisclosed, 0), false, endWonLate},
		{"LostKilledByWorker", row(sched.CopyLost, 0, sched.TaskRequested, 0), true, endAlreadyEnded},
		{"LostOfOldAttempt", row(sched.CopyLost, 0, sched.TaskRequested, 1), false, endAlreadyEnded},
		{"LostTaskFinished", row(sched.CopyLost, 0, sched.TaskFinished, 0), false, endAlreadyEnded},
		{"KilledByServer", row(sched.CopyKilled, 0, sched.TaskRequested, 0), false, endAlreadyEnded},
		{"KilledByWorker", row(sched.CopyRunning, 0, sched.TaskRequested, 0), true, endKilledByWorker},
		{"SuspendedKilledByWorker", row(sched.CopySuspended, 0, sched.TaskDisclosed, 0), true, endKilledByWorker},
		{"StaleAttempt", row(sched.CopyRunning, 0, sched.TaskRequested, 1), false, endStaleAttempt},
		{"WonRequested", row(sched.CopyRunning, 2, sched.TaskRequested, 2), false, endWon},
		{"WonDisclosed", row(sched.CopySuspended, 0, sched.TaskDisclosed, 0), false, endWon},
		{"UnwantedFinished", row(sched.CopyRunning, 0, sched.TaskFinished, 0), false, endUnwanted},
		{"UnwantedExecuted", row(sched.CopyRunning, 0, sched.TaskExecuted, 0), false, endUnwanted},
		{"UnwantedCanceled", row(sched.CopyRunning, 0, sched.TaskCanceled, 0), false, endUnwanted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classifyEnd(tt.row, FinishInput{Killed: tt.killed}); got != tt.want {
				t.Errorf("classifyEnd = %q, want %q", got, tt.want)
			}
		})
	}
}

// Each outcome leaves the copy in its own state, and its run time in its
// own part of free work.
func TestEndOutcomeEffects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o         endOutcome
		prior     sched.CopyState
		task      sched.TaskState
		wantState sched.CopyState
		wantWon   bool
		wantFree  sched.FreePart
		wantLost  float64 // the lost run time a late winner takes back
		wantAsk   bool
	}{
		{endWonLate, sched.CopyLost, sched.TaskDisclosed, sched.CopyWon, true, sched.FreeExecutedUnrequested, 7, false},
		{endWonLate, sched.CopyLost, sched.TaskRequested, sched.CopyWon, true, "", 7, false},
		{endAlreadyEnded, sched.CopyLost, sched.TaskRequested, sched.CopyLost, false, "", 0, false},
		{endAlreadyEnded, sched.CopyKilled, sched.TaskRequested, sched.CopyKilled, false, "", 0, true},
		{endKilledByWorker, sched.CopyRunning, sched.TaskRequested, sched.CopyLost, false, sched.FreeLostWithWorker, 0, false},
		{endStaleAttempt, sched.CopyRunning, sched.TaskRequested, sched.CopyKilled, false, "", 0, true},
		{endWon, sched.CopyRunning, sched.TaskDisclosed, sched.CopyWon, true, sched.FreeExecutedUnrequested, 0, false},
		{endWon, sched.CopySuspended, sched.TaskRequested, sched.CopyWon, true, "", 0, false},
		{endUnwanted, sched.CopyRunning, sched.TaskFinished, sched.CopyKilled, false, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.o)+"/"+string(tt.prior)+"/"+string(tt.task), func(t *testing.T) {
			t.Parallel()
			if got := tt.o.copyState(tt.prior); got != tt.wantState {
				t.Errorf("copyState = %q, want %q", got, tt.wantState)
			}
			if got := tt.o.won(); got != tt.wantWon {
				t.Errorf("won = %v, want %v", got, tt.wantWon)
			}
			r := endRow{copy: sched.Copy{State: tt.prior, RunSeconds: 7}, taskState: tt.task}
			free, lost, ask := endFree(tt.o, r)
			if free != tt.wantFree || lost != tt.wantLost || ask != tt.wantAsk {
				t.Errorf("endFree = %q, %v, %v; want %q, %v, %v", free, lost, ask, tt.wantFree, tt.wantLost, tt.wantAsk)
			}
		})
	}
}
