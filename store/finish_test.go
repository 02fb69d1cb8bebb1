package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// Each outcome of a copy's end, as the store applies it: the copy's state,
// the task's, the bill and the free part.
func TestFinishOutcomes(t *testing.T) {
	t.Parallel()
	type want struct {
		won, late, lost, replayed, billed bool
		copy                              sched.CopyState
		task                              sched.TaskState
		free                              sched.FreePart
	}
	tests := []struct {
		name    string
		request bool
		// before runs after copy 1 started on worker a (and copy 2 on the
		// same task, speculative), before the report of copy 1's end.
		before func(t *testing.T, db *store.DB)
		killed bool
		want   want
	}{
		{name: "WonRequested", request: true,
			want: want{won: true, billed: true, copy: sched.CopyWon, task: sched.TaskFinished}},
		{name: "WonDisclosed",
			want: want{won: true, copy: sched.CopyWon, task: sched.TaskExecuted, free: sched.FreeExecutedUnrequested}},
		{name: "WonLate", request: true,
			before: func(t *testing.T, db *store.DB) {
				if _, err := db.LoseWorker(context.Background(), "a", "lease-lapsed"); err != nil {
					t.Fatal(err)
				}
			},
			want: want{won: true, late: true, billed: true, copy: sched.CopyWon, task: sched.TaskFinished}},
		{name: "AlreadyEnded", request: true,
			before: func(t *testing.T, db *store.DB) {
				if _, err := db.ApplyDecisions(context.Background(), []sched.Decision{{Kind: sched.DecisionKill, Copy: 1}}); err != nil {
					t.Fatal(err)
				}
			},
			want: want{copy: sched.CopyKilled, task: sched.TaskRequested, free: sched.FreeSpeculativeLost}},
		{name: "KilledByWorker", request: true, killed: true,
			want: want{lost: true, copy: sched.CopyLost, task: sched.TaskRequested, free: sched.FreeLostWithWorker}},
		{name: "Unwanted", request: true,
			before: func(t *testing.T, db *store.DB) {
				if _, err := db.FinishCopy(context.Background(), store.FinishInput{Worker: "a", Copy: 2, RunSeconds: 1}); err != nil {
					t.Fatal(err)
				}
			},
			want: want{copy: sched.CopyKilled, task: sched.TaskFinished, free: sched.FreeSpeculativeLost}},
		{name: "Replayed", request: true,
			before: func(t *testing.T, db *store.DB) {
				if _, err := db.FinishCopy(context.Background(), store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 1}); err != nil {
					t.Fatal(err)
				}
			},
			want: want{won: true, replayed: true, copy: sched.CopyWon, task: sched.TaskFinished}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, now := setup(t)
			res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Tasks: echo(1)})
			if err != nil {
				t.Fatal(err)
			}
			set := res.Set.ID
			if tt.request {
				if _, err := db.Request(ctx, store.RequestInput{Owner: "u", SetID: set, All: true}); err != nil {
					t.Fatal(err)
				}
			}
			start(t, db, 1, set, 0, "a")
			if _, err := db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionStart, Copy: 2, Speculative: true,
				Task: sched.TaskRef{Set: set, Index: 0}, Slot: sched.SlotRef{Worker: "a", Slot: 1}}}); err != nil {
				t.Fatal(err)
			}
			*now = now.Add(3e9)
			if tt.before != nil {
				tt.before(t, db)
			}
			got, err := db.FinishCopy(ctx, store.FinishInput{Worker: "a", Copy: 1, RunSeconds: 2, Killed: tt.killed})
			if err != nil {
				t.Fatal(err)
			}
			if got.Won != tt.want.won || got.Late != tt.want.late || got.Lost != tt.want.lost || got.Replayed != tt.want.replayed ||
				(got.Bill != nil) != tt.want.billed || got.Free != tt.want.free {
				t.Errorf("result %+v, want %+v", got, tt.want)
			}
			_, task, err := db.GetTask(ctx, "u", sched.TaskRef{Set: set, Index: 0})
			if err != nil {
				t.Fatal(err)
			}
			if task.State != tt.want.task {
				t.Errorf("task state %q, want %q", task.State, tt.want.task)
			}
			var state sched.CopyState
			for _, c := range task.Copies {
				if c.ID == 1 {
					state = c.State
				}
			}
			if state != tt.want.copy {
				t.Errorf("copy state %q, want %q", state, tt.want.copy)
			}
		})
	}
}
