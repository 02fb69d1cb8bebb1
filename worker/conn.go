// The connection to the server: HTTP/2 client, registration, the
// Assignments stream and the loop that keeps them up.

package worker

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"batchd/internal/jitter"
	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
)

// NewHTTPClient returns an HTTP client suitable for the agent: HTTP/2 over
// TLS for https:// URLs and unencrypted HTTP/2 (h2c, prior knowledge) for
// http:// URLs, so the Assignments stream and the unary calls share one
// connection, with HTTP/2 pings to notice a dead server during a quiet
// stream. It sets no overall timeout (streams are long); the agent bounds
// each unary call itself.
//
// The agent, when Config.HTTPClient is nil, uses a client of its own whose
// pings follow the server's lease (LeaseTiming); this one's follow the
// default lease of 15 s: a ping after 3 s of silence, the connection
// dropped 3 s later without its ack.
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: newTransport(defaultLease)}
}

// newTransport is NewHTTPClient's transport, its pings timed for lease.
func newTransport(lease time.Duration) *http.Transport {
	var p http.Protocols
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	_, _, ping := wire.LeaseTiming(lease)
	return &http.Transport{
		Protocols:           &p,
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: ping,
			PingTimeout:     ping,
		},
	}
}

// connLoop registers, opens the Assignments stream and carries out its
// orders, re-opening it with backoff when it ends and registering again
// when the server answers NotFound. Once ctx is done it only keeps the
// registration alive (for reports) until the drain ends.
func (a *agent) connLoop(ctx context.Context) {
	var b backoff
	for a.comm.Err() == nil {
		a.mu.Lock()
		reg, gen, id, bye := a.registered, a.gen, a.workerID, a.goodbye
		a.mu.Unlock()
		if !reg || bye {
			if err := a.register(); err != nil {
				a.mu.Lock()
				never := a.gen == 0
				a.mu.Unlock()
				switch code := connect.CodeOf(err); {
				case never && (code == connect.CodeUnauthenticated || code == connect.CodePermissionDenied):
					a.fatal <- fmt.Errorf("worker: the server refused to register this worker (give a worker token with --token or BATCH_WORKER_TOKEN; `batchd user add --worker NAME` makes one): %w", err)
					return
				case never && (code == connect.CodeFailedPrecondition || code == connect.CodeInvalidArgument):
					// What this worker is (its isolation, its bound user)
					// will not change by asking again.
					a.fatal <- fmt.Errorf("worker: the server refused to register this worker: %w", err)
					return
				}
				a.log.Warn("register failed", "err", err)
				a.sleep(a.comm, b.next())
				continue
			}
			b.reset()
			continue
		}
		if ctx.Err() != nil {
			select {
			case <-a.needRegCh:
			case <-a.comm.Done():
			}
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		if a.gen != gen || !a.registered {
			cancel()
		}
		a.streamCancel = cancel
		a.mu.Unlock()
		opened := a.now()
		err := a.stream(sctx, id)
		cancel()
		if connect.CodeOf(err) == connect.CodeNotFound {
			a.log.Info("server does not know this worker; registering again")
			a.invalidate(gen)
			continue
		}
		a.mu.Lock()
		invalidated := a.gen != gen || !a.registered
		a.mu.Unlock()
		if ctx.Err() != nil || invalidated {
			continue // stopping, or register again at once
		}
		if a.now().Sub(opened) > 10*time.Second {
			b.reset()
		}
		a.log.Warn("assignments stream ended", "err", err)
		a.sleep(ctx, b.next())
	}
}

// sleep waits for d or until ctx is done.
func (a *agent) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// heldCopies lists the copies the worker runs or holds a result for.
// Call with a.mu held.
func (a *agent) heldCopies() []*batchv1.HeldCopy {
	ids := make([]int64, 0, len(a.copies))
	for id := range a.copies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	held := make([]*batchv1.HeldCopy, 0, len(ids))
	for _, id := range ids {
		c := a.copies[id]
		h := &batchv1.HeldCopy{
			CopyId:     id,
			Slot:       c.slot,
			Suspended:  c.state == copySuspended,
			Progress:   c.progress,
			CpuSeconds: c.cpu,
		}
		if !c.startedAt.IsZero() {
			h.StartedAt = timestamppb.New(c.startedAt)
		}
		if c.result != nil {
			h.CpuSeconds = c.result.CpuSeconds
		}
		held = append(held, h)
	}
	return held
}

// register announces the worker with the copies it runs or holds. Once
// stopping, it registers zero slots (the goodbye).
func (a *agent) register() error {
	a.mu.Lock()
	bye := a.goodbye
	req := &batchv1.RegisterRequest{
		Name:       a.name,
		Slots:      int32(a.slots),
		CanSuspend: a.canSuspend,
		Hostname:   a.hostname,
		Running:    a.heldCopies(),
		Version:    a.version,
		MemoryMb:   a.memoryMB,
		Gpus:       int32(a.gpus.count()),
		Pool:       a.pool,
		Partition:  a.part,
		Isolation:  string(a.isolation),
		BoundUser:  a.boundUser,
		Limits:     a.limits,
		EndsAt:     a.endsAtProto(),
		HandBack:   a.handBack,
	}
	if bye {
		req.MemoryMb = 0
		req.Gpus = 0
		// Every copy it started and has not reported is held (listed
		// in Running) until its report is delivered.
		req.Stopping = true
	}
	_, deadline, _ := wire.LeaseTiming(a.lease)
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(a.comm, deadline)
	defer cancel()
	sent := a.now()
	resp, err := a.client.Register(ctx, req)
	if bye {
		a.goodbyeOnce.Do(func() { close(a.goodbyeTried) })
	}
	if err != nil {
		return err
	}
	a.mu.Lock()
	if bye {
		a.goodbye = false
	}
	if resp.GetWorkerId() != "" {
		a.workerID = resp.GetWorkerId()
	}
	a.lease = seconds(resp.GetLeaseSeconds(), defaultLease)
	hb, _, _ := wire.LeaseTiming(a.lease)
	a.hbEvery = seconds(resp.GetHeartbeatSeconds(), hb)
	if resp.GetOutputCapBytes() > 0 {
		a.outCap = resp.GetOutputCapBytes()
	}
	if resp.GetKeepCapBytes() > 0 {
		a.keepCap = resp.GetKeepCapBytes()
	}
	a.registered = true
	a.gen++
	close(a.regCh)
	a.regCh = make(chan struct{})
	// Log the lease read here, under a.mu: once unlocked, a heartbeat sent
	// before this registration (or released by closing regCh) may be
	// answered and rewrite a.lease concurrently.
	lease := a.lease
	a.mu.Unlock()
	a.log.Info("registered", "worker_id", resp.GetWorkerId(), "held", len(req.Running),
		"lease", lease, "kill", resp.GetKill())
	for _, id := range resp.GetKill() {
		a.kill(id)
	}
	// The copies the server lost are killed; the others may run again.
	a.renewed(sent)
	if a.hc != nil {
		a.hc.setLease(lease)
	}
	return nil
}

// invalidate marks registration gen as no longer known to the server: the
// stream is closed and connLoop registers again.
func (a *agent) invalidate(gen int) {
	a.mu.Lock()
	if a.gen == gen && a.registered {
		a.registered = false
		if a.streamCancel != nil {
			a.streamCancel()
		}
	}
	a.mu.Unlock()
	select {
	case a.needRegCh <- struct{}{}:
	default:
	}
}

// leaseNow is the lease the server last gave.
func (a *agent) leaseNow() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lease
}

func seconds(s float64, def time.Duration) time.Duration {
	if s <= 0 {
		return def
	}
	return time.Duration(s * float64(time.Second))
}

// stream carries out the orders of one Assignments stream until it ends.
func (a *agent) stream(ctx context.Context, id string) error {
	st, err := a.client.Assignments(ctx, &batchv1.AssignmentsRequest{WorkerId: id})
	if err != nil {
		return err
	}
	defer st.Close()
	for st.Receive() {
		m := st.Msg()
		switch act := m.GetAction().(type) {
		case *batchv1.AssignmentsResponse_Start:
			a.start(act.Start)
		case *batchv1.AssignmentsResponse_Kill:
			a.kill(act.Kill)
		case *batchv1.AssignmentsResponse_Suspend:
			a.suspend(act.Suspend)
		case *batchv1.AssignmentsResponse_Resume:
			a.resume(act.Resume, m.ResumeSlot)
		case *batchv1.AssignmentsResponse_FollowOutput:
			a.followOutput(act.FollowOutput)
		case *batchv1.AssignmentsResponse_UnfollowOutput:
			a.unfollowOutput(act.UnfollowOutput)
		default:
			a.log.Warn("unknown assignment ignored")
		}
	}
	return st.Err()
}

// backoff yields waits of about 0.2 s, 0.4 s, ... up to 5 s, jittered.
type backoff struct{ b jitter.Backoff }

// next is the wait before the next try: jittered, doubling from backoffMin
// to backoffMax.
func (b *backoff) next() time.Duration {
	b.b.Min, b.b.Max = backoffMin, backoffMax
	return b.b.Next()
}

func (b *backoff) reset() { b.b.Reset() }
