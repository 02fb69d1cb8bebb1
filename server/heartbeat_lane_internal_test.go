package server

import (
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// A worker's heartbeat is heard, its lease renewed and its progress
// written while the server's lock is held by a long API write (here by
// the test itself, for as long as it likes: no clock involved): it
// neither waits for the write to end nor lets the lease lapse, and the
// lapse check once the lock is free counts the heartbeat.
func TestHeartbeatBesideLongWrite(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &now
	s, err := New(Config{DataDir: t.TempDir(), TickInterval: -1, Lease: 3 * time.Second, LeaseMargin: time.Second,
		Now: func() time.Time { return *clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt := s.LocalTransport()
	ctx := t.Context()
	if _, err := lt.Register(ctx, &batchv1.RegisterRequest{Name: "w", Slots: 1, Isolation: "namespaces"}); err != nil {
		t.Fatal(err)
	}

	s.mu.Lock() // the long write
	now = now.Add(3 * time.Second)
	heartbeatAnswered(t, ctx, lt, &batchv1.HeartbeatRequest{WorkerId: "w"}, s.mu.Unlock, "the heartbeat waited for the lock")
	now = now.Add(3 * time.Second) // 6 s after the registration, 3 s after the heartbeat
	s.mu.Unlock()

	s.DispatchOnce()
	s.mu.Lock()
	_, alive := s.workers["w"]
	s.mu.Unlock()
	if !alive {
		t.Fatal("the worker's lease lapsed although its heartbeat was heard")
	}
	if n := phaseCount(t, s, phaseWrite); n != 1 {
		t.Errorf("batchd_heartbeat_phase_seconds{phase=write} counts %d heartbeats, want 1 (written without the lock)", n)
	}
	if n := heartbeatsTimed(t, s); n != 1 {
		t.Errorf("batchd_heartbeat_seconds counts %d heartbeats, want 1 (the one answered without the lock)", n)
	}
}

// heartbeatsTimed is the number of heartbeats batchd_heartbeat_seconds
// has recorded.
func heartbeatsTimed(t *testing.T, s *Server) uint64 {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "batchd_heartbeat_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no batchd_heartbeat_seconds in the server's metrics")
	return 0
}
