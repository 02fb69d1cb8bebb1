// A task's copies with their suspension clocks, as GetTask answers.

package server

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// addSuspensions sets each copy's suspension clock (when the suspension
// under way began, the seconds of those that ended) from sus.
func addSuspensions(t *batchv1.Task, sus map[sched.CopyID]store.Suspension) {
	for _, c := range t.GetCopies() {
		s, ok := sus[sched.CopyID(c.Id)]
		if !ok {
			continue
		}
		if !s.Since.IsZero() {
			c.SuspendedAt = timestamppb.New(s.Since)
		}
		c.SuspendedSeconds = s.Seconds
	}
}
