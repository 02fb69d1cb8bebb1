// What the agent tells the server: heartbeats with progress and CPU time,
// and each copy's end, held until the server has answered.

package worker

import (
	"context"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
)

// progressChanged asks for an early heartbeat.
func (a *agent) progressChanged() {
	select {
	case a.progressCh <- struct{}{}:
	default:
	}
}

// heartbeatLoop renews the lease every heartbeat interval, and soon after a
// copy's progress changed (at most once a second).
func (a *agent) heartbeatLoop() {
	var last time.Time
	var b backoff // after a failed heartbeat: retry sooner than the interval
	failed := false
	for {
		a.mu.Lock()
		reg, every, regCh := a.registered, a.hbEvery, a.regCh
		a.mu.Unlock()
		if !reg {
			select {
			case <-regCh:
				last = a.now() // Register renewed the lease
			case <-a.comm.Done():
				return
			}
			continue
		}
		wait := every - a.now().Sub(last)
		if failed {
			wait = min(wait, b.next())
		}
		t := time.NewTimer(wait)
		select {
		case <-a.comm.Done():
			t.Stop()
			return
		case <-regCh:
			t.Stop()
			last = a.now()
			continue
		case <-t.C:
		case <-a.progressCh:
			t.Stop()
			if gap := minProgressGap - a.now().Sub(last); gap > 0 {
				a.sleep(a.comm, gap)
			}
		}
		failed = !a.heartbeat()
		if !failed {
			b.reset()
		}
		last = a.now()
	}
}

// heartbeat sends one heartbeat with the live copies' progress, and says
// whether the server answered.
func (a *agent) heartbeat() bool {
	a.mu.Lock()
	gen, id := a.gen, a.workerID
	req := &batchv1.HeartbeatRequest{WorkerId: id}
	ids := make([]int64, 0, len(a.copies))
	for cid, c := range a.copies {
		if c.state == copyRunning || c.state == copySuspended {
			ids = append(ids, cid)
		}
	}
	slices.Sort(ids)
	for _, cid := range ids {
		c := a.copies[cid]
		req.Copies = append(req.Copies, &batchv1.CopyProgress{CopyId: cid, Progress: c.progress, CpuSeconds: c.cpu})
	}
	_, deadline, _ := wire.LeaseTiming(a.lease)
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(a.comm, deadline)
	defer cancel()
	sent := a.now()
	resp, err := a.client.Heartbeat(ctx, req)
	if err != nil {
		if connect.CodeOf(err) == connect.CodeNotFound {
			a.log.Info("heartbeat: server does not know this worker; registering again")
			a.invalidate(gen)
		} else if a.comm.Err() == nil {
			a.log.Warn("heartbeat failed", "err", err)
		}
		return false
	}
	if l := resp.GetLeaseSeconds(); l > 0 {
		a.mu.Lock()
		a.lease = seconds(l, defaultLease)
		a.mu.Unlock()
	}
	for _, k := range resp.GetKill() {
		a.kill(k)
	}
	// A registration since this heartbeat was sent renewed the lease
	// already (and restated what runs); this answer, though, only
	// renews it for copies the server has not named for killing.
	a.mu.Lock()
	same := a.gen == gen
	a.mu.Unlock()
	if same {
		a.renewed(sent)
	}
	return true
}

// finish holds the copy's result and delivers it, then forgets the copy.
func (a *agent) finish(c *copyRun, res *batchv1.ReportFinishedRequest) {
	defer a.copiesWG.Done()
	if a.handBack && !res.Killed && !res.TimedOut {
		a.handBackIfStopping(c, res)
	}
	// Its process has ended: its devices are free before the server,
	// told of the end, can give them to another copy.
	a.gpus.give(c.id)
	a.mu.Lock()
	c.state = copyEnded
	c.result = res
	a.mu.Unlock()
	select {
	case a.ended <- struct{}{}:
	default:
	}
	a.log.Debug("copy ended", "copy", c.id, "exit_code", res.ExitCode, "killed", res.Killed,
		"timed_out", res.TimedOut, "start_error", res.StartError, "run_seconds", res.RunSeconds)
	a.deliver(c)
	a.mu.Lock()
	delete(a.copies, c.id)
	a.forgotten.add(c.id)
	a.lastBusy = a.now()
	a.mu.Unlock()
	select {
	case a.ended <- struct{}{}:
	default:
	}
	if c.scratch != "" {
		if err := a.scratch.give(c.scratch, c.scratchIndex); err != nil {
			a.log.Warn("removing scratch dir", "copy", c.id, "err", err)
		}
	}
}

// handBackIfStopping, in HandBack mode, marks a copy that ended without
// the worker's doing as killed (handed back: the server loses the copy,
// runs its task again and bills nothing for it) when the worker is
// stopping, or starts to within handBackWait of a failed end.
//
// The batch system signals the copies and the worker at about the same
// moment, in no set order: a copy may end of the pilot's SIGTERM (by the
// signal, or by an exit status its trap chose, 143 or any other) before
// the worker has seen its own. So any end once the worker stops, whatever
// its status, is handed back; and a failed end (a non-zero exit or a
// signal, whatever the code) waits for the stop before it counts as the
// task's result. A success before the stop is delivered at once: a copy
// that the signal made exit 0 reports success itself. A start error is
// the command's own and is delivered at once.
func (a *agent) handBackIfStopping(c *copyRun, res *batchv1.ReportFinishedRequest) {
	select {
	case <-a.stopped:
	default:
		if res.StartError != "" || res.ExitCode == 0 && c.signal == 0 {
			return
		}
		a.mu.Lock()
		c.awaitingStop = true
		a.mu.Unlock()
		t := time.NewTimer(handBackWait)
		defer t.Stop()
		select {
		case <-a.stopped:
		case <-t.C:
			return
		}
	}
	res.Killed = true
	a.log.Info("copy handed back: it ended while the worker was stopping", "copy", c.id, "exit_code", res.ExitCode,
		"signal", res.Signal)
}

// deliver reports the copy's end until the server answers. NotFound means
// the server forgot the worker: register again (listing the held copy) and
// retry. FailedPrecondition, PermissionDenied and InvalidArgument mean the
// server will never take this result: it is dropped. Anything else is
// retried with backoff for as long as the agent lives.
func (a *agent) deliver(c *copyRun) {
	var b backoff
	for {
		a.mu.Lock()
		reg, gen, regCh := a.registered, a.gen, a.regCh
		req := proto.CloneOf(c.result)
		req.WorkerId = a.workerID
		a.mu.Unlock()
		if reg {
			ctx, cancel := context.WithTimeout(a.comm, max(reportTimeout, a.leaseNow()))
			resp, err := a.report(ctx, req)
			cancel()
			if err == nil {
				a.log.Debug("copy reported", "copy", c.id, "outcome", resp.GetOutcome().String())
				return
			}
			switch connect.CodeOf(err) {
			case connect.CodeNotFound:
				a.invalidate(gen)
			case connect.CodeFailedPrecondition, connect.CodePermissionDenied, connect.CodeInvalidArgument:
				a.log.Warn("server refused the copy's result; dropped", "copy", c.id, "err", err)
				return
			default:
				if a.comm.Err() == nil {
					a.log.Warn("report failed; will retry", "copy", c.id, "err", err)
				}
			}
		}
		t := time.NewTimer(b.next())
		select {
		case <-t.C:
		case <-regCh:
		case <-a.comm.Done():
			t.Stop()
			a.mu.Lock()
			a.undelivered++
			a.mu.Unlock()
			a.log.Error("copy result not delivered before shutdown", "copy", c.id)
			return
		}
		t.Stop()
	}
}
