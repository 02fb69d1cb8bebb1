package server

import (
	"context"
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
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.StageRows = 100
	lt := s.LocalTransport()
	ctx := t.Context()
	uctx := context.WithValue(ctx, callerKey{}, Caller{Name: "ann", Role: store.RoleUser})
	if _, err := lt.Register(ctx, &batchv1.RegisterRequest{Name: "w", Slots: 1, Isolation: "namespaces"}); err != nil {
		t.Fatal(err)
	}
	stream, err := lt.Assignments(ctx, &batchv1.AssignmentsRequest{WorkerId: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := s.disclose(uctx, discloseHeader{request: true}, []sched.TaskSpec{{Argv: []string{"true"}}}, nil); err != nil {
		t.Fatal(err)
	}
	var copyID int64
	for copyID == 0 && stream.Receive() {
		copyID = stream.Msg().GetStart().GetCopyId()
	}
	if copyID == 0 {
		t.Fatalf("no start: %v", stream.Err())
	}

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
	big := make([]sched.TaskSpec, 450)
	for i := range big {
		big[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
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
