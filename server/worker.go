package server

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// maxWorkerSlots bounds the slots one worker may register.
const maxWorkerSlots = 1 << 16

// maxWorkerMemoryMB bounds the memory a worker may offer (1 EiB in MiB).
const maxWorkerMemoryMB = 1 << 40

// workerHandler implements WorkerService (the worker protocol).
type workerHandler struct{ s *Server }

// Register records the worker as up. Copies the store holds as live on it
// but that it no longer runs are lost (their tasks queue again); copies it
// runs whose tasks still want them are attached again; the rest it must
// kill. A worker already known is first taken down in the scheduler, so
// that its slots are rebuilt from what it reports.
func (h workerHandler) Register(ctx context.Context, req *batchv1.RegisterRequest) (*batchv1.RegisterResponse, error) {
	s := h.s
	if req.Name == "" {
		return nil, sched.Errorf(sched.EINVALID, "worker name is empty")
	}
	if req.Slots < 0 || req.Slots > maxWorkerSlots {
		return nil, sched.Errorf(sched.EINVALID, "slots must be between 0 and %d", maxWorkerSlots)
	}
	if req.MemoryMb < 0 || req.MemoryMb > maxWorkerMemoryMB {
		return nil, sched.Errorf(sched.EINVALID, "memory_mb must be between 0 and %d", int64(maxWorkerMemoryMB))
	}
	if req.Gpus < 0 || req.Gpus > sched.MaxWorkerGPUs {
		return nil, sched.Errorf(sched.EINVALID, "gpus must be between 0 and %d", sched.MaxWorkerGPUs)
	}
	route := sched.Route{Pool: req.Pool, Partition: req.Partition}
	if err := route.Validate(); err != nil {
		return nil, err
	}
	endsAt, err := workerEnd(req.EndsAt, s.now())
	if err != nil {
		return nil, err
	}
	id := sched.WorkerID(req.Name)
	if err := s.claimWorker(ctx, id); err != nil {
		return nil, err
	}
	if err := s.checkIsolation(id, req); err != nil {
		return nil, err
	}
	in := store.RegisterInput{Worker: id, Hostname: req.Hostname, Slots: req.Slots, CanSuspend: req.CanSuspend, Version: req.Version, MemoryMB: req.MemoryMb, GPUs: req.Gpus,
		Isolation: sched.NormalIsolation(req.Isolation), BoundUser: req.BoundUser, Limits: req.Limits, EndsAt: endsAt, HandBack: req.HandBack,
		Stopping: req.Stopping, Route: route}
	for _, c := range req.Running {
		if !seconds0(c.CpuSeconds) || math.IsNaN(c.Progress) || math.IsInf(c.Progress, 0) {
			return nil, sched.Errorf(sched.EINVALID, "copy %d: cpu_seconds must be finite, not negative and at most %g, progress finite", c.CopyId, float64(store.MaxSeconds))
		}
		in.Running = append(in.Running, store.HeldCopy{Copy: sched.CopyID(c.CopyId), Slot: c.Slot, Suspended: c.Suspended,
			Progress: c.Progress, CPUSeconds: c.CpuSeconds})
	}
	s.lockWorker()
	defer s.mu.Unlock()
	res, err := s.db.RegisterWorker(ctx, in)
	if err != nil {
		return nil, err
	}
	now := s.now()
	at := seconds(now)
	if old := s.workers[id]; old != nil {
		close(old.stop)
		delete(s.workers, id)
		s.apply(sched.Event{Kind: sched.EventWorkerDown, Time: at, Worker: id})
	} else {
		// Not known in memory (lease lapsed, or never seen): the scheduler
		// must not hold it either.
		s.apply(sched.Event{Kind: sched.EventWorkerDown, Time: at, Worker: id})
	}
	s.apply(sched.Event{Kind: sched.EventWorkerUp, Time: at, Worker: id, Slots: req.Slots, CanSuspend: req.CanSuspend, MemoryMB: req.MemoryMb,
		GPUs: req.Gpus, BoundUser: req.BoundUser, EndsAt: endSeconds(endsAt), Route: route})
	w := newWorkerConn(id, req.Hostname, req.Slots, req.CanSuspend, req.BoundUser, now)
	s.workers[id] = w
	heard := new(atomic.Int64)
	heard.Store(now.UnixNano())
	s.heard.Store(id, heard)
	kill := append([]sched.CopyID{}, res.Kill...)
	for _, c := range res.Attached {
		if _, err := s.sched.Apply(sched.Event{Kind: sched.EventCopyAttached, Time: at, Copy: c.ID, Task: c.Task, Slot: c.Slot,
			Speculative: c.Speculative, StartedAt: seconds(c.StartedAt), Suspended: c.State == sched.CopySuspended}); err != nil {
			s.log.Warn("re-attach refused by the scheduler; killing the copy", "copy", c.ID, "err", err.Error())
			if _, err := s.db.ApplyDecisions(ctx, []sched.Decision{{Kind: sched.DecisionKill, Copy: c.ID, Task: c.Task, Slot: c.Slot}}); err != nil {
				s.log.Error("record kill", "copy", c.ID, "err", err.Error())
			}
			kill = append(kill, c.ID)
		}
		if c.Progress >= 0 {
			s.apply(sched.Event{Kind: sched.EventCopyProgress, Time: at, Copy: c.ID, Progress: c.Progress})
		}
	}
	for _, c := range res.Lost {
		s.metrics.addFree(sched.FreeLostWithWorker, now.Sub(c.StartedAt).Seconds())
		s.watch.publish(c.Task.Set, []int32{c.Task.Index})
	}
	s.hearPilotFailures(now, res.Lost)
	s.log.Info("worker registered", "worker", id, "slots", req.Slots, "isolation", in.Isolation, "bound_user", req.BoundUser,
		"attached", len(res.Attached), "lost", len(res.Lost), "kill", len(kill))
	s.decide(now)
	hb, _, _ := wire.LeaseTiming(s.cfg.Lease)
	out := &batchv1.RegisterResponse{WorkerId: string(id), LeaseSeconds: s.cfg.Lease.Seconds(),
		HeartbeatSeconds: hb.Seconds(), OutputCapBytes: s.cfg.OutputCap,
		KeepCapBytes: s.cfg.KeepMaxTask}
	for _, k := range kill {
		out.Kill = append(out.Kill, int64(k))
	}
	return out, nil
}

// Assignments streams the worker's queue of starts, kills, suspends and
// resumes, after restating its live copies. A newer stream of the same
// worker ends an older one; what could not be sent stays queued for the
// next stream.
func (h workerHandler) Assignments(ctx context.Context, req *batchv1.AssignmentsRequest, stream *connect.ServerStream[batchv1.AssignmentsResponse]) error {
	s := h.s
	f, err := s.openAssignments(ctx, sched.WorkerID(req.WorkerId))
	if err != nil {
		return err
	}
	defer f.close()
	// Send the headers now: a client's call returns once they arrive, so it
	// knows the stream is open before anything is queued.
	if err := stream.Send(nil); err != nil {
		return err
	}
	for {
		msgs, err := f.next()
		if msgs == nil {
			return err
		}
		err = sendBurst(ctx, func() error {
			for i, m := range msgs {
				if err := stream.Send(m); err != nil {
					f.requeue(msgs[i:])
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// assignFeed is one open Assignments stream of a worker, remote (the
// handler above) or in-process (localStream).
type assignFeed struct {
	s    *Server
	ctx  context.Context
	w    *workerConn
	stop chan struct{}
}

// openAssignments opens the worker's stream: it ends the worker's older
// stream and queues, ahead of what is queued, a restatement of what the
// worker should hold.
func (s *Server) openAssignments(ctx context.Context, id sched.WorkerID) (*assignFeed, error) {
	if err := s.checkWorker(ctx, id); err != nil {
		return nil, err
	}
	s.lockWorker()
	defer s.mu.Unlock()
	w := s.workers[id]
	if w == nil {
		return nil, sched.Errorf(sched.ENOTFOUND, "worker %q is not registered: register again", id)
	}
	if w.streamOpen {
		close(w.stop)
	}
	stop := make(chan struct{})
	w.stop, w.streamOpen = stop, true
	// A stream that broke may have swallowed assignments. Each new stream
	// therefore first restates what the worker should hold: a start for
	// every live copy (the agent ignores a copy it holds), then a suspend
	// or a resume to match its state (no-ops when it already is so).
	// Decisions queued meanwhile follow and end in the same state.
	live, err := s.db.WorkerCopies(ctx, id)
	if err != nil {
		w.streamOpen = false
		return nil, err
	}
	restate := make([]*batchv1.AssignmentsResponse, 0, 2*len(live))
	for _, lc := range live {
		c := lc.Copy
		restate = append(restate, &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Start{Start: &batchv1.StartCopy{
			CopyId: int64(c.ID), Slot: c.Slot.Slot, SetId: int64(c.Task.Set), Index: c.Task.Index,
			Spec: specToProto(lc.Spec), Speculative: c.Speculative, Owner: lc.Owner, Attempt: c.Attempt}}})
		if c.State == sched.CopySuspended {
			restate = append(restate, &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: int64(c.ID)}})
		} else {
			restate = append(restate, &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: int64(c.ID)}, ResumeSlot: &c.Slot.Slot})
		}
	}
	restate = append(restate, s.live.followOrders(id)...)
	w.queue = append(restate, w.queue...)
	return &assignFeed{s: s, ctx: ctx, w: w, stop: stop}, nil
}

// next waits for orders and takes every one queued. It returns nil when
// the stream is to end: with nil when the server ended it (a newer stream,
// shutdown, the caller went away), with an error when the caller's token
// was revoked.
func (f *assignFeed) next() ([]*batchv1.AssignmentsResponse, error) {
	s, w := f.s, f.w
	for {
		// A revoked worker token gets nothing more; what is queued stays
		// queued (its copies are lost when its lease lapses).
		if err := s.stillValid(f.ctx); err != nil {
			return nil, err
		}
		s.lockWorker()
		select {
		case <-f.stop:
			s.mu.Unlock()
			return nil, nil
		default:
		}
		msgs := w.queue
		w.queue = nil
		s.mu.Unlock()
		if len(msgs) > 0 {
			return msgs, nil
		}
		select {
		case <-f.ctx.Done():
			return nil, nil
		case <-s.done:
			return nil, nil
		case <-f.stop:
			return nil, nil
		case <-w.notify:
		}
	}
}

// requeue puts back orders taken but not delivered, ahead of newer ones.
func (f *assignFeed) requeue(msgs []*batchv1.AssignmentsResponse) {
	if len(msgs) == 0 {
		return
	}
	f.s.lockWorker()
	f.w.queue = append(append([]*batchv1.AssignmentsResponse{}, msgs...), f.w.queue...)
	f.s.mu.Unlock()
}

// close marks the stream closed unless a newer one replaced it.
func (f *assignFeed) close() {
	f.s.lockWorker()
	if f.w.stop == f.stop {
		f.w.streamOpen = false
	}
	f.s.mu.Unlock()
}

// Heartbeat renews the worker's lease and records its copies' progress.
func (h workerHandler) Heartbeat(ctx context.Context, req *batchv1.HeartbeatRequest) (*batchv1.HeartbeatResponse, error) {
	s := h.s
	start := time.Now()
	defer s.dm.observeHeartbeat(start)
	id := sched.WorkerID(req.WorkerId)
	if err := s.checkWorker(ctx, id); err != nil {
		return nil, err
	}
	var in []store.CopyProgress
	for _, c := range req.Copies {
		if !seconds0(c.CpuSeconds) || math.IsNaN(c.Progress) || math.IsInf(c.Progress, 0) {
			return nil, sched.Errorf(sched.EINVALID, "copy %d: cpu_seconds must be finite, not negative and at most %g, progress finite", c.CopyId, float64(store.MaxSeconds))
		}
		in = append(in, store.CopyProgress{Copy: sched.CopyID(c.CopyId), Progress: c.Progress, CPUSeconds: c.CpuSeconds})
	}
	// A registered worker is heard at once, and writes without the lock
	// (heartbeat_lane.go).
	if cell, heard := s.heardAt(id); heard {
		at := s.now()
		cell.Store(at.UnixNano())
		return s.heartbeatHeard(ctx, at, id, in)
	}
	// Not heard since this server started (restored from the store), or
	// not registered: under the lock, as every state change.
	s.lockWorker()
	defer s.mu.Unlock()
	got := time.Now()
	defer s.lm.observeLockHeld(got)
	s.dm.observeHeartbeatPhase(phaseLock, got.Sub(start))
	w := s.workers[id]
	if w == nil {
		return nil, sched.Errorf(sched.ENOTFOUND, "worker %q is not registered: register again", req.WorkerId)
	}
	hb, err := s.db.Heartbeat(ctx, id, in)
	if err != nil {
		return nil, err
	}
	now := s.now()
	w.lastSeen = now
	// Its next heartbeats are heard without the lock.
	cell := new(atomic.Int64)
	cell.Store(now.UnixNano())
	s.heard.Store(id, cell)
	if err := s.heartbeatResults(ctx, now, w, hb); err != nil {
		return nil, err
	}
	return s.heartbeatAnswer(hb), nil
}

// ReportFinished records a copy's end and answers WON or DISCARDED; a
// replay gets the first answer.
func (h workerHandler) ReportFinished(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	s := h.s
	defer s.lm.observeReport(time.Now())
	if req.WorkerId == "" || req.CopyId <= 0 {
		return nil, sched.Errorf(sched.EINVALID, "worker_id and copy_id are required")
	}
	if err := s.checkWorker(ctx, sched.WorkerID(req.WorkerId)); err != nil {
		return nil, err
	}
	in, err := s.finishInput(req)
	if err != nil {
		return nil, err
	}
	s.reporting.Store(in.Copy, struct{}{})
	defer s.reporting.Delete(in.Copy)
	res, err := s.finish(in)
	if err != nil {
		return nil, err
	}
	return &batchv1.ReportFinishedResponse{Outcome: reportOutcome(res)}, nil
}

// finishInput checks a report of a worker already checked (checkWorker)
// and turns it into the store's input.
func (s *Server) finishInput(req *batchv1.ReportFinishedRequest) (store.FinishInput, error) {
	if req.CopyId <= 0 {
		return store.FinishInput{}, sched.Errorf(sched.EINVALID, "copy_id is required")
	}
	if !seconds0(req.CpuSeconds) || !seconds0(req.RunSeconds) {
		// They are billed: a NaN would also fail the whole group commit.
		return store.FinishInput{}, sched.Errorf(sched.EINVALID, "cpu_seconds and run_seconds must be finite, not negative and at most %g", float64(store.MaxSeconds))
	}
	exit := req.ExitCode
	if req.StartError != "" && exit == 0 {
		exit = 127
	}
	return store.FinishInput{Worker: sched.WorkerID(req.WorkerId), Copy: sched.CopyID(req.CopyId), ExitCode: exit,
		Killed: req.Killed, TimedOut: req.TimedOut, Stdout: req.Stdout, Stderr: req.Stderr,
		StdoutTruncated: req.StdoutTruncated, StderrTruncated: req.StderrTruncated,
		CPUSeconds: req.CpuSeconds, RunSeconds: req.RunSeconds, StartError: req.StartError, Signal: req.Signal,
		Kept: s.keptFromReport(req)}, nil
}

// reportOutcome is what a worker hears of its recorded report.
func reportOutcome(res store.FinishResult) batchv1.ReportOutcome {
	if res.Won {
		return batchv1.ReportOutcome_REPORT_OUTCOME_WON
	}
	return batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED
}

// seconds0 says whether a worker-reported number of seconds is finite, not
// negative and at most store.MaxSeconds (what the ledger may bill).
func seconds0(v float64) bool { return validSeconds(v) }

// claimWorker binds a worker name to the calling worker user on its first
// registration, and refuses another worker user's name (EPERMISSION).
func (s *Server) claimWorker(ctx context.Context, id sched.WorkerID) error {
	if err := pilotMay(ctx, id); err != nil {
		return err
	}
	caller := callerFrom(ctx)
	if o, ok := s.workerOwners.Load(id); ok && o.(string) == caller {
		return nil
	}
	if err := s.db.ClaimWorker(ctx, id, caller); err != nil {
		return err
	}
	s.workerOwners.Store(id, caller)
	return nil
}

// checkWorker refuses a call about a worker that belongs to another worker
// user (EPERMISSION, so that one worker token cannot forge another's
// reports) and about one never registered (ENOTFOUND: register first).
func (s *Server) checkWorker(ctx context.Context, id sched.WorkerID) error {
	if err := pilotMay(ctx, id); err != nil {
		return err
	}
	caller := callerFrom(ctx)
	o, ok := s.workerOwners.Load(id)
	if !ok {
		owner, err := s.db.WorkerOwner(ctx, id)
		if err != nil {
			return err
		}
		s.workerOwners.Store(id, owner)
		o = owner
	}
	if o.(string) != caller {
		return sched.Errorf(sched.EPERMISSION, "worker %q belongs to another worker token", id)
	}
	return nil
}

// pilotMay refuses a pilot's token a call about any worker but its own
// (EPERMISSION): a task that found its pilot's token cannot pose as
// another worker with it.
func pilotMay(ctx context.Context, id sched.WorkerID) error {
	if p := CallerFrom(ctx).Pilot; p != "" && p != id {
		return sched.Errorf(sched.EPERMISSION, "this token is worker %q's: it may not speak for worker %q", p, id)
	}
	return nil
}

// finishCall is one ReportFinished waiting for its group commit.
type finishCall struct {
	in   store.FinishInput
	res  store.FinishResult
	err  error
	done chan struct{}
}

// finish records a copy's end. Reports that arrive together are committed
// in one transaction and followed by one Decide (group commit): a goroutine
// processes batches while reports are pending; callers wait for their
// answer.
func (s *Server) finish(in store.FinishInput) (store.FinishResult, error) {
	call := &finishCall{in: in, done: make(chan struct{})}
	s.finishQ.add(call, s.finishBatch)
	<-call.done
	return call.res, call.err
}

// finishBatch commits a batch of reports and the decisions that follow
// them in one transaction (store.FinishThenDecide): the scheduler hears of
// the ends and decides inside it, under mu. Then it carries the decisions
// out and answers each caller.
func (s *Server) finishBatch(batch []*finishCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	ins := make([]store.FinishInput, len(batch))
	for i, c := range batch {
		ins[i] = c.in
	}
	s.lockWorker()
	defer s.mu.Unlock()
	s.dm.finishCommits.Add(1)
	s.known.give(ins)
	var now time.Time
	heard := false // the scheduler heard of an end
	// The scheduler hears of the ends at the time the store stamps them
	// (store/decisionclock.go).
	outs, ds, started, decErr, err := s.db.FinishThenDecideAt(context.Background(), ins, func(at time.Time, outs []store.FinishOutcome) []sched.Decision {
		now = at
		for i, c := range batch {
			if res := outs[i].Result; outs[i].Err == nil && !res.Replayed {
				heard = true
				s.hearEnd(now, c.in, res)
			}
		}
		if !heard {
			return nil
		}
		return s.sched.Decide(seconds(now))
	})
	if err != nil {
		for _, c := range batch {
			c.err = err
		}
		if heard {
			// The scheduler is ahead of the store: it heard of ends and made
			// decisions that were not committed. The reports are refused
			// (their workers send them again); the scheduler starts again
			// from what the store holds.
			s.resync(fmt.Errorf("record copies' ends: %w", err))
		}
		return
	}
	var ended []sched.SetID // sets whose tasks ended: their dependents may go
	for i, c := range batch {
		res := outs[i].Result
		c.res, c.err = res, outs[i].Err
		if c.err != nil || res.Replayed {
			continue
		}
		if res.Won {
			ended = endedSets(ended, res.Task.Set)
		}
		s.dm.copiesEnded.Add(1)
		s.live.ended(c.in.Copy)
		if !res.WasLive && res.Late {
			s.log.Info("late result of a lost copy kept; its re-runs are killed", "copy", c.in.Copy, "worker", c.in.Worker,
				"set", res.Task.Set, "index", res.Task.Index)
			s.dm.lateResults.Add(1)
			s.metrics.recoverLost(res.LostSeconds)
		}
		if res.Retried != nil {
			s.metrics.retried(sched.RetriedByPolicy, 1)
		}
		if res.Stopped != nil {
			for _, b := range res.Stopped.Bills {
				s.metrics.addBilled(b.SlotSeconds)
			}
			s.log.Info("stop rule fired", "set", res.Task.Set, "index", res.Task.Index, "why", res.Stopped.Fired.Why, "canceled", res.Stopped.Fired.Canceled)
			s.watch.publish(res.Task.Set, nil)
		}
		if res.Clamped {
			s.metrics.billClamped(c.in.Worker)
			s.log.Warn("reported run time cut to what the server observed", "copy", c.in.Copy, "worker", c.in.Worker,
				"reported", res.ReportedRunSeconds, "kept", res.RunSeconds)
		}
		if res.Won && res.Task.State == sched.TaskFinished {
			s.metrics.observeFinished(res.Task)
		}
		if res.Free != "" { // lost copies were counted when lost
			s.metrics.addFree(res.Free, res.RunSeconds)
		}
		if res.Bill != nil {
			s.metrics.addBilled(res.Bill.SlotSeconds)
		}
		s.watch.publish(res.Task.Set, []int32{res.Task.Index})
	}
	if heard {
		s.carryOut(now, ds, started, decErr)
	}
	if s.resolveDeps(context.Background(), now, ended) {
		s.decide(now)
	}
}

// hearEnd tells the scheduler of one recorded end. Call with mu held.
func (s *Server) hearEnd(now time.Time, in store.FinishInput, res store.FinishResult) {
	if res.WasLive {
		kind := sched.EventCopyFinished
		if res.Lost {
			kind = sched.EventCopyLost
		}
		// The scheduler learns the run time the worker reported and
		// the store kept (what β and t_new fit, the same numbers a
		// restart replays), and from its difference to its own clock
		// the dispatch and report latency, which it then takes off
		// running copies' run times and adds to a new copy's cost
		// (sched/lag.go). By the server's clock alone β came
		// out 1.41–1.46 for a true 1.259; by reported run times alone,
		// with running copies still judged by the server's clock, 2,000
		// `true` tasks on 64 slots started 1,562 speculative copies.
		ev := sched.Event{Kind: kind, Time: seconds(now), Copy: in.Copy}
		if kind == sched.EventCopyFinished && res.RunSeconds > 0 {
			ev.Duration = res.RunSeconds
		}
		s.apply(ev)
	} else if res.Late {
		// A copy lost with its worker's lease ran to its end before
		// its worker stopped it, and its task still wants a result:
		// the first result is kept and the re-runs are killed.
		s.apply(sched.Event{Kind: sched.EventLateResult, Time: seconds(now), Task: sched.TaskRef{Set: res.Task.Set, Index: res.Task.Index}})
	}
	if res.Stopped != nil {
		// The result fired the set's stop rule, which canceled the rest
		// of the set in the same transaction.
		s.apply(sched.Event{Kind: sched.EventStopped, Time: seconds(now), Set: res.Task.Set, Task: res.Stopped.Fired.Task})
	}
	if res.PilotFailed {
		s.pilotFailed(now, sched.TaskRef{Set: res.Task.Set, Index: res.Task.Index})
	}
	if res.PilotStopping {
		s.pilotStopping(now, in.Worker)
	}
	if res.Retried != nil {
		// The set's policy retried the attempt this copy won.
		s.apply(sched.Event{Kind: sched.EventRetried, Time: seconds(now), Set: res.Task.Set, Owner: res.Owner, Tasks: []sched.TaskInfo{*res.Retried},
			Route: s.retriedRoute(context.Background(), res.Task.Set)})
	}
}
