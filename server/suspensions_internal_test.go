package server

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// A copy under suspension gets its start and the seconds of the ended
// ones; a copy whose suspensions all ended gets the seconds alone; a copy
// never suspended gets neither.
func TestAddSuspensions(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	task := &batchv1.Task{Copies: []*batchv1.Copy{{Id: 1}, {Id: 2}, {Id: 3}}}
	addSuspensions(task, map[sched.CopyID]store.Suspension{1: {Since: since, Seconds: 4}, 2: {Seconds: 7.5}})
	c := task.Copies
	if !c[0].GetSuspendedAt().AsTime().Equal(since) || c[0].SuspendedSeconds != 4 {
		t.Fatalf("copy 1: %v", c[0])
	}
	if c[1].SuspendedAt != nil || c[1].SuspendedSeconds != 7.5 {
		t.Fatalf("copy 2: %v", c[1])
	}
	if c[2].SuspendedAt != nil || c[2].SuspendedSeconds != 0 {
		t.Fatalf("copy 3: %v", c[2])
	}
}
