package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// workerConn is what the server knows of a registered worker: its lease and
// the queue of assignments its Assignments stream delivers. Guarded by
// Server.mu.
type workerConn struct {
	id         sched.WorkerID
	hostname   string
	slots      int32
	canSuspend bool
	boundUser  string // the one user whose tasks it runs ("": anyone's)
	lastSeen   time.Time
	queue      []*batchv1.AssignmentsResponse
	notify     chan struct{} // capacity 1: something was queued
	stop       chan struct{} // closed to end the current stream
	streamOpen bool
	drained    bool // Drain took its slots: it gets no new copies
	// missingSince notes when each live copy was first left out of the
	// worker's heartbeats.
	missingSince map[sched.CopyID]time.Time
}

func newWorkerConn(id sched.WorkerID, hostname string, slots int32, canSuspend bool, boundUser string, now time.Time) *workerConn {
	return &workerConn{id: id, hostname: hostname, slots: slots, canSuspend: canSuspend, boundUser: boundUser, lastSeen: now,
		notify: make(chan struct{}, 1), stop: make(chan struct{})}
}

// The server's state (store transactions that change it, the scheduler,
// the worker queues) is guarded by Server.mu, taken in one of two lanes.
// The worker lane (registrations, heartbeats, reports, assignments, the
// dispatch tick) takes mu directly, a batch of reports at a time (see
// finish). The API lane (disclose, request, cancel) queues its writes and
// a single goroutine carries out every write queued, up to maxAPIBatch
// writes and maxAPIBatchWork tasks, under one hold of mu (apiWrite):
// however many clients write at once,
// dispatch waits for at most one such batch, and a write waits for the
// batches ahead of it, not for one hold of mu per write ahead of it.

// maxAPIBatch bounds the API writes carried out under one hold of mu.
const maxAPIBatch = 128

// maxAPIBatchWork bounds the work of the API writes carried out under one
// hold of mu, in tasks they name or store: a batch takes writes until
// their work would pass it (a single bigger write goes alone). By count
// alone, 128 discloses of a few thousand tasks each held mu, and every
// heartbeat and report behind it, for seconds. A disclose stores a task
// in about 7 µs (BenchmarkBigSet), so a batch of this much holds mu for
// well under 100 ms.
const maxAPIBatchWork = 10_000

// lockWorker takes mu for the worker lane; release with s.mu.Unlock().
func (s *Server) lockWorker() { s.mu.Lock() }

// apiOp is one API write waiting for its turn.
type apiOp struct {
	run      func()
	work     int // tasks it names or stores, at least 1 (maxAPIBatchWork)
	done     chan struct{}
	panicked any // what run panicked with, raised again in the caller
}

// apiWrite runs fn with mu held, in the API lane, and returns once it ran.
// fn changes the store, then the scheduler and the watchers; the
// scheduler runs afterwards, once for the whole batch. A panic in fn is
// raised again here, in the handler's goroutine, where connect's recover
// turns it into Internal; the batch and mu are unharmed, and the scheduler
// is rebuilt from the store (apiBatch).
func (s *Server) apiWrite(fn func()) { s.apiWriteWork(1, fn) }

// apiWriteWork is apiWrite for a write that names or stores work tasks.
func (s *Server) apiWriteWork(work int, fn func()) {
	op := &apiOp{run: fn, work: max(work, 1), done: make(chan struct{})}
	s.apiQ.add(op, s.apiBatch)
	<-op.done
	if op.panicked != nil {
		panic(op.panicked)
	}
}

// apiBatch carries out a batch of API writes under one hold of mu. A
// write that panicked may have changed the store without telling the
// scheduler (or the other way round): the scheduler is then rebuilt from
// the store, as when finishBatch's commit fails, before it decides.
func (s *Server) apiBatch(batch []*apiOp) {
	s.mu.Lock()
	if s.apiBatchSeen != nil {
		s.apiBatchSeen(batch)
	}
	var panicked any
	for _, op := range batch {
		func() {
			defer func() { op.panicked = recover() }()
			op.run()
		}()
		if panicked == nil {
			panicked = op.panicked
		}
	}
	if panicked != nil {
		s.resync(fmt.Errorf("an API write panicked: %v", panicked))
	}
	// Decide before the callers hear back: a requested task's copy is
	// on its way (forking) while its caller reads the answer and calls
	// again, not after. Handing the decision to the dispatch loop cost a
	// goroutine switch and made the fork share the CPUs with the caller's
	// next call: BenchmarkRequestToStart/idle median 1.70 / 1.87 / 1.88 ms
	// that way, 1.43 / 1.60 / 1.41 ms so (alternated, load 1.5).
	s.decide(s.now())
	s.mu.Unlock()
	for _, op := range batch {
		close(op.done)
	}
}

func (w *workerConn) push(m *batchv1.AssignmentsResponse) {
	w.queue = append(w.queue, m)
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// apply feeds one event to the scheduler. The store already holds the
// change, so a refusal is a bug to log, not an error for the caller.
func (s *Server) apply(ev sched.Event) sched.ApplyResult {
	res, err := s.sched.Apply(ev)
	if err != nil {
		s.log.Error("scheduler refused an event", "kind", ev.Kind, "set", ev.Set, "copy", ev.Copy, "worker", ev.Worker, "err", err.Error())
	}
	return res
}

// decide asks the scheduler what to do now, persists the decisions, and
// queues them for the workers. Call with mu held.
func (s *Server) decide(now time.Time) {
	ds := s.sched.Decide(seconds(now))
	if len(ds) == 0 {
		s.takeRequestsHeard() // nothing started: their stamps will do
		s.refreshStats()
		return
	}
	// Stamped at the decision's time: the record of a copy is what the
	// scheduler judged (store/decisionclock.go).
	started, err := s.db.ApplyDecisionsHeardAt(context.Background(), now, ds, s.takeRequestsHeard())
	s.carryOut(now, ds, started, err)
}

// carryOut queues decisions, recorded as started (err nil) or not, for
// the workers. Call with mu held.
func (s *Server) carryOut(now time.Time, ds []sched.Decision, started []store.Started, err error) {
	if len(ds) == 0 {
		s.refreshStats()
		return
	}
	if err != nil {
		// The copies were never recorded: tell the scheduler they are lost
		// so that their tasks queue again, and tell no worker to start them.
		// Kills, suspends and resumes are still carried out.
		s.log.Error("record decisions", "err", err.Error(), "decisions", len(ds))
		kept := ds[:0:0]
		for _, d := range ds {
			if d.Kind == sched.DecisionStart {
				s.apply(sched.Event{Kind: sched.EventCopyLost, Time: seconds(now), Copy: d.Copy})
			} else {
				kept = append(kept, d)
			}
		}
		ds, started = kept, nil
	}
	s.known.remember(started)
	spec := make(map[sched.CopyID]store.Started, len(started))
	for _, st := range started {
		spec[st.Decision.Copy] = st
	}
	changed := map[sched.SetID][]int32{}
	for _, d := range ds {
		var m *batchv1.AssignmentsResponse
		switch d.Kind {
		case sched.DecisionStart:
			st := spec[d.Copy]
			m = &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Start{Start: &batchv1.StartCopy{
				CopyId: int64(d.Copy), Slot: d.Slot.Slot, SetId: int64(d.Task.Set), Index: d.Task.Index,
				Spec: specToProto(st.Spec), Speculative: d.Speculative, Owner: st.Owner, Attempt: st.Attempt,
				FollowOutput: s.live.startFollowed(d.Task, d.Copy, d.Slot.Worker)}}}
			if d.Speculative {
				s.metrics.speculativeStarted()
			}
		case sched.DecisionKill:
			m = &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: int64(d.Copy)}}
			s.known.killed(d.Copy)
		case sched.DecisionSuspend:
			m = &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: int64(d.Copy)}}
		case sched.DecisionResume:
			// A resumed copy may get another slot than the one it gave up.
			m = &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: int64(d.Copy)}, ResumeSlot: &d.Slot.Slot}
		default:
			continue
		}
		changed[d.Task.Set] = append(changed[d.Task.Set], d.Task.Index)
		s.log.Debug("decision", "kind", d.Kind, "copy", d.Copy, "set", d.Task.Set, "index", d.Task.Index,
			"worker", d.Slot.Worker, "slot", d.Slot.Slot, "reason", d.Reason)
		if w := s.workers[d.Slot.Worker]; w != nil {
			w.push(m)
		} else if d.Kind == sched.DecisionStart {
			s.log.Warn("start for an unknown worker", "copy", d.Copy, "worker", d.Slot.Worker)
		}
	}
	for set, idx := range changed {
		s.watch.publish(set, idx)
	}
	s.refreshStats()
}

// DispatchOnce does what the dispatch loop does every tick: it lapses the
// leases of workers silent for longer than the lease plus its margin (by
// then the worker has stopped their copies itself; they are lost and their
// tasks queue again) and runs the scheduler. Tests call it instead of waiting.
func (s *Server) DispatchOnce() {
	s.lockWorker()
	defer s.mu.Unlock()
	now := s.now()
	for _, id := range sortedWorkerIDs(s.workers) {
		w := s.workers[id]
		last := s.lastHeard(w)
		if now.Sub(last) <= s.cfg.Lease+s.cfg.LeaseMargin {
			continue
		}
		if w.slots == 0 {
			// Its last word was its goodbye (zero slots): it left.
			s.log.Info("worker left", "worker", id)
			s.dropWorker(now, w, "gone")
			continue
		}
		s.log.Warn("worker lease lapsed", "worker", id, "silent_for", now.Sub(last).String())
		s.dm.leaseLapses.Add(1)
		s.dropWorker(now, w, "lease-lapsed")
	}
	s.retireWorkers(now)
	s.decide(now)
	s.refreshShares()
}

// dropWorker forgets a worker: its live copies are lost in the store and
// the scheduler, its stream ends. Call with mu held.
func (s *Server) dropWorker(now time.Time, w *workerConn, state string) {
	lost, err := s.db.LoseWorker(context.Background(), w.id, state)
	if err != nil {
		s.log.Error("lose worker", "worker", w.id, "err", err.Error())
		return
	}
	s.apply(sched.Event{Kind: sched.EventWorkerDown, Time: seconds(now), Worker: w.id})
	close(w.stop)
	delete(s.workers, w.id)
	s.heard.Delete(w.id)
	s.heartbeatWriters.Delete(w.id)
	for _, c := range lost {
		s.metrics.addFree(sched.FreeLostWithWorker, now.Sub(c.StartedAt).Seconds())
		s.watch.publish(c.Task.Set, []int32{c.Task.Index})
	}
	s.hearPilotFailures(now, lost)
}

func sortedWorkerIDs(m map[sched.WorkerID]*workerConn) []sched.WorkerID {
	return slices.Sorted(maps.Keys(m))
}

// Drain begins a graceful stop: calls that add work (Disclose, Request)
// are refused with Unavailable from now on, and the named workers (the
// embedded slots of batchd serve) get no new copies, while the copies
// they run go on and report as usual. Other workers keep their slots:
// their copies survive the server's restart. Drain cannot be undone; Close
// ends the server.
func (s *Server) Drain(workers ...sched.WorkerID) {
	s.draining.Store(true)
	s.lockWorker()
	defer s.mu.Unlock()
	now := seconds(s.now())
	for _, id := range workers {
		w := s.workers[id]
		if w == nil {
			continue
		}
		s.apply(sched.Event{Kind: sched.EventWorkerUp, Time: now, Worker: id, Slots: 0, CanSuspend: w.canSuspend, BoundUser: w.boundUser})
		w.drained = true
	}
	s.refreshStats()
	s.log.Info("draining: no new work is accepted; running copies go on", "workers", workers)
}

// stopping refuses a call that adds work while the server drains.
func (s *Server) stopping() error {
	if s.draining.Load() {
		return sched.Errorf(sched.EUNAVAILABLE, "batchd is stopping: no new work is taken; try again once it is back")
	}
	return nil
}
