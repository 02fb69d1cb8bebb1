// A heartbeat's write, off its answer. A registered worker's heartbeat
// renews its lease when it is heard (heartbeat_lane.go); its write (the
// copies' progress, the worker's last heartbeat in the store, and what
// the store finds: copies to kill, copies the worker left out) runs in
// the background, and the answer waits for it at most heartbeatWait.
// Whatever holds the write up (the writer busy with a disclose's chunk,
// SQLite's write lock held by a WAL checkpoint, a slow commit, the
// disk) then delays the progress, never the answer; and when the write
// cannot start at once (the writer busy, or an earlier heartbeat of the
// same worker still writing), the answer does not wait at all.
//
// Each worker has at most one heartbeat write running and at most one
// waiting: a heartbeat that comes while its worker's write runs takes
// the waiting place, and the one it replaces is answered at once and
// never written (a heartbeat carries every copy's progress, so the
// newest says all the older did). Writes of one worker run in their
// heartbeats' order, and what each found goes to the scheduler in that
// order.
//
// A write never records progress after its copy's end: the store writes
// a heartbeat's progress only for a copy live in the same transaction,
// and a copy's end is written through the same single writer.
//
// Copies to kill that a write finds after its heartbeat was answered go
// with the worker's next answer: a copy the store does not hold live on
// the worker never becomes live there again, so the order stays right.
//
// A crash between an answer and its write loses that heartbeat's
// progress, CPU seconds and last-heartbeat time in the store, and no
// more: the lease lives in the server's memory (a restarted server gives
// every worker a fresh lease), a worker's next heartbeat carries every
// copy's progress again, and a kill not yet sent is found again by the
// next heartbeat the restarted server writes. What a crash loses is what
// a heartbeat that never arrived would lose.

package server

import (
	"context"
	"sync"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// heartbeatWait is Config.HeartbeatWait's default: how long a registered
// worker's heartbeat waits for its write before it is answered.
const heartbeatWait = 20 * time.Millisecond

// heartbeatWriter is one worker's heartbeat writes.
type heartbeatWriter struct {
	mu      sync.Mutex
	running bool            // a write of this worker's runs (writeHeartbeats)
	next    *heartbeatWrite // the newest heartbeat not yet written
	kills   []sched.CopyID  // found by writes after their heartbeats' answers
}

// heartbeatWrite is one heartbeat to write.
type heartbeatWrite struct {
	at   time.Time // when it was heard (the server's clock)
	in   []store.CopyProgress
	done chan struct{} // closed once written, or replaced by a newer one
	// waits is closed when the write found the store's writer busy.
	waits chan struct{}
	// Set before done closes:
	written bool
	hb      store.HeartbeatResult
	err     error
	// answered says its heartbeat was answered without it; under mu.
	answered bool
}

// heartbeatWriterOf returns worker id's heartbeat writes.
func (s *Server) heartbeatWriterOf(id sched.WorkerID) *heartbeatWriter {
	if v, ok := s.heartbeatWriters.Load(id); ok {
		return v.(*heartbeatWriter)
	}
	v, _ := s.heartbeatWriters.LoadOrStore(id, new(heartbeatWriter))
	return v.(*heartbeatWriter)
}

// heartbeatHeard answers the heartbeat of registered worker id, heard
// at at, without the server's lock: it hands the write to the worker's
// heartbeat writes and waits for it at most s.cfg.HeartbeatWait, and not at
// all when it cannot start at once. Do not call with mu held.
func (s *Server) heartbeatHeard(ctx context.Context, at time.Time, id sched.WorkerID, in []store.CopyProgress) (*batchv1.HeartbeatResponse, error) {
	hw := s.heartbeatWriterOf(id)
	job := &heartbeatWrite{at: at, in: in, done: make(chan struct{}), waits: make(chan struct{})}
	if hw.submit(job, &s.dm) {
		go s.writeHeartbeats(id, hw, job)
		t := time.NewTimer(s.cfg.HeartbeatWait)
		select {
		case <-job.done:
		case <-job.waits:
		case <-t.C:
		case <-ctx.Done(): // the caller is gone; the write goes on
		}
		t.Stop()
	}
	hw.mu.Lock()
	late := true
	select {
	case <-job.done:
		late = !job.written
	default:
		job.answered = true
	}
	kills := hw.kills
	hw.kills = nil
	hw.mu.Unlock()
	if !late && job.err != nil {
		return nil, job.err
	}
	out := &batchv1.HeartbeatResponse{LeaseSeconds: s.cfg.Lease.Seconds()}
	if late {
		s.dm.heartbeatsDeferred.Add(1)
	} else {
		kills = append(kills, job.hb.Kill...)
	}
	seen := make(map[sched.CopyID]bool, len(kills))
	for _, k := range kills {
		if !seen[k] {
			seen[k] = true
			out.Kill = append(out.Kill, int64(k))
		}
	}
	return out, nil
}

// submit hands job to hw and says whether the caller starts the writes
// (none ran); else job waits, in the place of the one that waited.
func (hw *heartbeatWriter) submit(job *heartbeatWrite, dm *dispatchMetrics) (start bool) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if !hw.running {
		hw.running = true
		return true
	}
	if old := hw.next; old != nil {
		close(old.done) // never written: job says all it said
		dm.heartbeatsCoalesced.Add(1)
	}
	hw.next = job
	return false
}

// writeHeartbeats writes job, then each heartbeat of worker id that
// waited meanwhile, until none waits.
func (s *Server) writeHeartbeats(id sched.WorkerID, hw *heartbeatWriter, job *heartbeatWrite) {
	for job != nil {
		if f := s.heartbeatWriteFunc; f != nil {
			f()
		}
		var (
			hb  store.HeartbeatResult
			err error
		)
		select {
		case <-s.done:
			err = sched.Errorf(sched.EUNAVAILABLE, "the server is shutting down")
		default:
			began := time.Now()
			hb, err = s.db.HeartbeatWrite(context.Background(), id, job.at, job.in, func() { close(job.waits) })
			s.dm.observeHeartbeatPhase(phaseWriter, hb.WriterWait)
			if err == nil {
				s.dm.observeHeartbeatPhase(phaseWrite, time.Since(began)-hb.WriterWait)
				s.dm.observeHeartbeatPhase(phaseBegin, hb.Tx.Begin)
				s.dm.observeHeartbeatPhase(phaseStatements, hb.Tx.Statements)
				s.dm.observeHeartbeatPhase(phaseCommit, hb.Tx.Commit)
			}
		}
		hw.mu.Lock()
		job.written, job.hb, job.err = true, hb, err
		if job.answered && err == nil {
			hw.kills = append(hw.kills, hb.Kill...)
		}
		late := job.answered
		close(job.done)
		hw.mu.Unlock()
		if err == nil {
			s.hearFound(&heartbeatFound{worker: id, at: job.at, hb: hb, queued: time.Now()})
		} else if late {
			s.log.Warn("write a heartbeat answered before it", "worker", id, "err", err.Error())
		}
		hw.mu.Lock()
		job, hw.next = hw.next, nil
		if job == nil {
			hw.running = false
		}
		hw.mu.Unlock()
	}
}

// idle says whether no heartbeat write of hw runs or waits.
func (hw *heartbeatWriter) idle() bool {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return !hw.running
}
