package server

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// A worker's heartbeat is answered while the store's writer is held by a
// large disclose's chunk (held by the store's hook, as a slow chunk
// would hold it, for as long as the test likes: no clock involved): it
// neither waits for the chunk nor loses its progress, which its write
// records once the writer is free. A heartbeat that queued for the
// writer waited for the chunk to end.
func TestHeartbeatBesideBusyWriter(t *testing.T) {
	t.Parallel()
	w := newWorkerRunningOne(t, 3*time.Second, 2)
	s, lt, ctx := w.s, w.lt, w.ctx
	progress := func() float64 {
		t.Helper()
		_, tasks, err := s.db.GetTasks(ctx, "ann", w.set, []int32{0})
		if err != nil || len(tasks) != 1 {
			t.Fatalf("get the task: %v", err)
		}
		return tasks[0].Progress
	}
	beat := &batchv1.HeartbeatRequest{WorkerId: "w", Copies: []*batchv1.CopyProgress{{CopyId: w.copy, Progress: 0.5, CpuSeconds: 1}}}

	release, done := holdDiscloseChunk(t, w)

	heartbeatAnswered(t, ctx, lt, beat, release, "the heartbeat waited for the writer, held by a disclose's chunk")
	if n := s.dm.heartbeatsDeferred.Load(); n != 1 {
		t.Errorf("%d heartbeats deferred, want 1", n)
	}
	if p := progress(); p == 0.5 {
		t.Errorf("progress %g recorded while the writer was held", p)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The deferred write records it once the writer is free, with no
	// further heartbeat.
	heartbeatWritesDone(t, s, "w")
	if p := progress(); p != 0.5 {
		t.Errorf("progress %g after the writer came free, want 0.5", p)
	}
	if n := s.dm.heartbeatsDeferred.Load(); n != 1 {
		t.Errorf("%d heartbeats deferred, want 1", n)
	}
	if n := phaseCount(t, s, phaseWriter); n != 1 {
		t.Errorf("batchd_heartbeat_phase_seconds{phase=writer} counts %d writes, want 1", n)
	}
}

// phaseCount is the number of heartbeats batchd_heartbeat_phase_seconds
// has recorded for phase.
func phaseCount(t *testing.T, s *Server, phase string) uint64 {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "batchd_heartbeat_phase_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == phase {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
