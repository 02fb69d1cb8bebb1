package server

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// A worker's report is recorded between two chunks of one large
// disclose: the disclose is held after its first chunk (by the store's
// hook, as a slow chunk would be) until the report is in, and the report
// neither waits for the rest of the disclose nor sees its half-stored
// set. With the whole insert in one transaction under the lock, the
// report could only come after the disclose.
func TestReportBetweenDiscloseChunks(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, time.Minute, 100)
	s, lt, ctx, uctx, copyID := w.s, w.lt, w.ctx, w.uctx, w.copy

	between, reported := make(chan sched.SetID), make(chan struct{})
	s.db.StageChunkFunc = func(set sched.SetID, chunk int) {
		if chunk != 1 {
			return
		}
		between <- set
		select {
		case <-reported:
		case <-time.After(3 * time.Minute): // a hang guard only
		}
	}
	type answer struct {
		res store.DiscloseResult
		err error
	}
	done := make(chan answer, 1)
	big := trueTasks(450)
	go func() {
		res, err := s.disclose(uctx, discloseHeader{name: "big"}, big, nil)
		done <- answer{res, err}
	}()
	var staged sched.SetID
	select {
	case staged = <-between:
	case a := <-done:
		t.Fatalf("the disclose ended (%v) with no point between chunks where a report could go", a.err)
	}
	res, err := lt.ReportFinished(ctx, &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: copyID, RunSeconds: 1})
	if err != nil || res.GetOutcome() != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("report between chunks: %v, %v", res, err)
	}
	if _, err := s.db.GetTaskSet(ctx, "ann", staged); sched.ErrorCode(err) != sched.ENOTFOUND {
		t.Errorf("the half-stored set is visible: %v", err)
	}
	select {
	case a := <-done:
		t.Fatalf("the disclose ended (%v) before its second chunk", a.err)
	default:
	}
	close(reported)
	a := <-done
	if a.err != nil || a.res.Set.ID != staged || a.res.Count != 450 || a.res.Set.Counts.Disclosed != 450 {
		t.Fatalf("disclose: %+v, %v", a.res, a.err)
	}
	s.mu.Lock()
	known := s.sched.Stats()
	s.mu.Unlock()
	if known.QueuedDisclosed+known.RunningCopies < 450 {
		t.Errorf("the scheduler holds %d disclosed tasks and %d copies, want the set's 450 tasks", known.QueuedDisclosed, known.RunningCopies)
	}
}
