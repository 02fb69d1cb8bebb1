package worker

import (
	"net/http"
	"sync"
	"syscall"
	"time"
)

// The lease holds on both sides (as HTCondor's job lease does): the
// server runs a silent worker's copies again only once the worker has been
// silent for the lease plus a margin, and the worker, when it could not
// renew its lease for a whole lease, stops its copies itself. So a copy
// and its re-run never run at the same time.
//
// The worker counts a renewal from the moment it sent the call that the
// server answered (a Heartbeat or a Register): the server renewed it
// later than that, so the worker's lease always ends first. When it ends,
// running copies are suspended (SIGSTOP; killed on a worker that cannot
// suspend) and finished results stay held for delivery. When a renewal
// comes back, the server's answer names the copies it lost meanwhile
// (killed here) and the others run on (SIGCONT).

// renewed records a renewal the server answered for a call sent at sent,
// and lets the copies stopped by a lapse run again. Call it after carrying
// out the answer's kills, so that a copy the server lost is never resumed.
func (a *agent) renewed(sent time.Time) {
	a.mu.Lock()
	until := sent.Add(a.lease)
	if until.After(a.leaseUntil) {
		a.leaseUntil = until
	}
	var resumed int
	if a.leaseLapsed && a.now().Before(a.leaseUntil) {
		a.leaseLapsed = false
		now := a.now()
		for _, c := range a.copies {
			if !c.leaseStopped {
				continue
			}
			c.leaseStopped = false
			if c.state == copyRunning && !c.killed {
				if err := signalGroup(c.pgid, syscall.SIGCONT); err != nil {
					a.log.Warn("resume after the lease came back failed", "copy", c.id, "err", err)
				}
				c.runSince = now
				c.poke()
			}
			resumed++
		}
	}
	a.mu.Unlock()
	if resumed > 0 {
		a.log.Info("lease renewed: stopped copies run again", "copies", resumed)
	}
	select {
	case a.leaseWake <- struct{}{}:
	default:
	}
}

// leaseLoop stops the copies when the lease ends without a renewal.
func (a *agent) leaseLoop() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		a.mu.Lock()
		until, lapsed := a.leaseUntil, a.leaseLapsed
		a.mu.Unlock()
		var fire <-chan time.Time
		if !until.IsZero() && !lapsed {
			t.Reset(until.Sub(a.now()))
			fire = t.C
		}
		select {
		case <-a.comm.Done():
			return
		case <-a.leaseWake:
		case <-fire:
			a.lapse()
		}
		if fire != nil && !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
	}
}

// lapse stops every running copy if the lease has ended: suspended, or
// killed on a worker that cannot suspend.
func (a *agent) lapse() {
	a.mu.Lock()
	now := a.now()
	if a.leaseLapsed || a.leaseUntil.IsZero() || now.Before(a.leaseUntil) {
		a.mu.Unlock()
		return
	}
	a.leaseLapsed = true
	var stopped, killed []int64
	for _, c := range a.copies {
		if c.killed || c.state == copyEnded || c.leaseStopped {
			continue
		}
		if !a.canSuspend {
			killed = append(killed, c.id)
			continue
		}
		c.leaseStopped = true
		if c.state == copyRunning {
			if err := signalGroup(c.pgid, syscall.SIGSTOP); err != nil {
				a.log.Warn("stopping a copy at the lease's end failed", "copy", c.id, "err", err)
			}
			c.runAccum += now.Sub(c.runSince)
		}
		stopped = append(stopped, c.id)
	}
	late := now.Sub(a.leaseUntil)
	a.mu.Unlock()
	for _, id := range killed {
		a.kill(id)
	}
	if len(stopped)+len(killed) > 0 {
		a.log.Warn("lease not renewed in time: copies stopped until it is (the server runs them again elsewhere after the lease and its margin)",
			"suspended", len(stopped), "killed", len(killed), "late", late)
	}
}

// leaseClient is the agent's own HTTP client: its HTTP/2 keepalive follows
// the lease (LeaseTiming), rebuilt when the server's lease changes.
type leaseClient struct {
	mu    sync.Mutex
	lease time.Duration
	t     *http.Transport
}

func newLeaseClient(lease time.Duration) *leaseClient {
	return &leaseClient{lease: lease, t: newTransport(lease)}
}

// RoundTrip sends the request over the transport of the current lease.
func (l *leaseClient) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	t := l.t
	l.mu.Unlock()
	return t.RoundTrip(r)
}

// setLease rebuilds the transport for a new lease. Calls under way finish
// on the old one; its idle connections are closed.
func (l *leaseClient) setLease(lease time.Duration) {
	l.mu.Lock()
	if lease == l.lease {
		l.mu.Unlock()
		return
	}
	old := l.t
	l.lease, l.t = lease, newTransport(lease)
	l.mu.Unlock()
	old.CloseIdleConnections()
}
