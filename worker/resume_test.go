package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	batchv1 "batchd/proto/batch/v1"
)

// A suspended copy gives its slot up, and the server may resume it on
// another free slot of the worker, then hand the slot it left to a new
// copy. The worker must take the resume's slot as the copy's own: else it
// finds the new copy's slot busy with the resumed one, and a later
// registration tells the server the copy sits on a slot the server gave
// to another.
func TestResumeOnAnotherSlot(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	b := setupWith(t, nil, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
	})
	state := func(id int64) copyState {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		if c := b.a.copies[id]; c != nil {
			return c.state
		}
		return copyEnded
	}
	b.srv.startCopy(6, 1, sh(`sleep 30`))
	b.srv.waitFor("copy 6 to run", func() bool { return state(6) == copyRunning })
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 6}})
	b.srv.waitFor("copy 6 to be suspended", func() bool { return state(6) == copySuspended })
	// Slot 1 goes to copy 7, which ends; copy 6 resumes on slot 0 (freed
	// elsewhere), and slot 1 goes to copy 8.
	b.srv.startCopy(7, 1, sh(`true`))
	b.srv.report(7)
	slot0 := int32(0)
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: 6}, ResumeSlot: &slot0})
	b.srv.waitFor("copy 6 to run again", func() bool { return state(6) == copyRunning })
	b.srv.startCopy(8, 1, sh(`true`))
	b.srv.report(8)
	b.a.mu.Lock()
	held := b.a.heldCopies()
	b.a.mu.Unlock()
	for _, h := range held {
		if h.GetCopyId() == 6 && h.GetSlot() != 0 {
			t.Errorf("copy 6 held on slot %d, want slot 0 (its resume's)", h.GetSlot())
		}
	}
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: 6}})
	b.srv.report(6)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "start on a busy slot") {
		t.Errorf("the worker found a slot busy:\n%s", log.String())
	}
}
