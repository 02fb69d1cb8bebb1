// The server's orders on the Assignments stream: start, kill, suspend and
// resume a copy.

package worker

import (
	"syscall"

	batchv1 "batchd/proto/batch/v1"
)

// start runs a new copy. A copy id the worker already holds is ignored (a
// replayed order).
func (a *agent) start(s *batchv1.StartCopy) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		a.log.Info("start ignored: worker stopping", "copy", s.GetCopyId())
		return
	}
	if _, ok := a.copies[s.GetCopyId()]; ok {
		a.log.Info("start ignored: copy already held", "copy", s.GetCopyId())
		return
	}
	if a.forgotten.has(s.GetCopyId()) {
		a.log.Info("start ignored: copy ended already (a restatement that crossed its report)", "copy", s.GetCopyId())
		return
	}
	// A suspended copy keeps its slot number but not the slot: the server
	// suspended it to give the slot to this one (preemption).
	for _, c := range a.copies {
		if c.slot == s.GetSlot() && !c.killed && (c.state == copyRunning || (c.state == copyStarting && !c.suspendAt)) {
			a.log.Warn("start on a busy slot", "copy", s.GetCopyId(), "slot", s.GetSlot(), "busy_with", c.id)
		}
	}
	a.lastBusy = a.now()
	c := &copyRun{
		id:       s.GetCopyId(),
		slot:     s.GetSlot(),
		start:    s,
		keepCap:  a.keepCap,
		live:     newLiveOutput(a.outCap),
		wake:     make(chan struct{}, 1),
		progress: -1,

		scratchIndex: -1,
	}
	a.copies[c.id] = c
	a.copiesWG.Add(1)
	a.log.Debug("starting copy", "copy", c.id, "slot", c.slot, "set", s.GetSetId(), "index", s.GetIndex(),
		"argv", s.GetSpec().GetArgv())
	go a.runCopy(c)
	if s.GetFollowOutput() {
		a.followCopy(c)
	}
}

// kill kills a copy's whole process group; the copy is reported killed.
func (a *agent) kill(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.copies[id]
	if !ok || c.state == copyEnded || c.killed {
		return
	}
	c.killed = true
	if c.state == copyRunning || c.state == copySuspended {
		if err := signalGroup(c.pgid, syscall.SIGKILL); err != nil {
			a.log.Warn("kill failed", "copy", id, "err", err)
		}
	}
	a.log.Info("killed copy", "copy", id)
}

// suspend stops a running copy's process group.
func (a *agent) suspend(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.copies[id]
	if ok && c.state == copyStarting {
		c.suspendAt = true
		return
	}
	if !ok || c.state != copyRunning {
		return
	}
	if !c.leaseStopped { // else stopped already, and its run time counted
		if err := signalGroup(c.pgid, syscall.SIGSTOP); err != nil {
			a.log.Warn("suspend failed", "copy", id, "err", err)
			return
		}
		c.runAccum += a.now().Sub(c.runSince)
	}
	c.state = copySuspended
	c.poke()
	a.log.Info("suspended copy", "copy", id)
}

// resume continues a suspended copy's process group, on slot when the
// server names one: a suspended copy gave its slot up and may resume on
// another, and the slot it left may already be the next copy's.
func (a *agent) resume(id int64, slot *int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.copies[id]
	if ok && slot != nil && c.state != copyEnded {
		c.slot = *slot
	}
	if ok && c.state == copyStarting {
		c.suspendAt = false
		return
	}
	if !ok || c.state != copySuspended {
		return
	}
	// Read the clock before the copy runs again: its run time must not
	// miss a moment it ran (a test's clock may move as soon as it does).
	now := a.now()
	if !c.leaseStopped { // else it runs once the lease is renewed
		if err := signalGroup(c.pgid, syscall.SIGCONT); err != nil {
			a.log.Warn("resume failed", "copy", id, "err", err)
			return
		}
	}
	c.state = copyRunning
	c.runSince = now
	c.poke()
	a.log.Info("resumed copy", "copy", id)
}
