// Live output: a copy's output pushed to the server while somebody follows
// its task. Nothing is pushed for a copy nobody follows: the server asks
// (StartCopy.follow_output, or a follow_output order) and says stop
// (unfollow_output, or ReportOutput's answer).

package worker

import (
	"bytes"
	"context"
	"sync"
	"time"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
)

const (
	// liveCoalesce is how long a push waits for the rest of a line: output
	// that ends in a newline goes at once, a partial line after this.
	liveCoalesce = 10 * time.Millisecond
	// liveChunk bounds the bytes of each stream one push carries: both
	// fit the server's smallest request limit (1 MiB), in JSON too.
	liveChunk = 256 << 10
	// liveRetry is the wait before a failed push is tried again.
	liveRetry = 200 * time.Millisecond
	// liveTries bounds the pushes tried once the copy has ended: its
	// report carries its whole output anyway.
	liveTries = 3
)

// liveOutput holds a copy's two output streams, kept under the output cap
// as for the report, and the state of their push.
type liveOutput struct {
	mu  sync.Mutex
	out [2]capBuffer // stdout, stderr
	// following: a pusher runs (or is about to); stop: the server asked
	// it to end; closed: the copy's pipes are drained, nothing more comes.
	following bool
	stop      bool
	closed    bool
	sent      [2]int64      // bytes of each stream the server holds
	wake      chan struct{} // capacity 1; made when first followed
	// orders counts follow orders: a stop answered to a push sent before
	// the latest order is stale (the server opened a new buffer since).
	orders int
}

func newLiveOutput(cap int64) *liveOutput {
	o := &liveOutput{}
	o.out[0].cap, o.out[1].cap = cap, cap
	return o
}

// stream is the writer of stream i (0 stdout, 1 stderr) of o.
func (o *liveOutput) stream(i int) *liveWriter { return &liveWriter{o: o, i: i} }

// liveWriter writes one stream of a liveOutput.
type liveWriter struct {
	o *liveOutput
	i int
}

// Write keeps what fits under the cap (capBuffer.Write) and wakes the
// pusher when the copy is followed. It never fails.
func (w *liveWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	_, _ = o.out[w.i].Write(p)
	if o.following {
		poke(o.wake)
	}
	o.mu.Unlock()
	return len(p), nil
}

// close says the copy's pipes are drained: the pusher sends what is left
// and ends.
func (o *liveOutput) close() {
	o.mu.Lock()
	o.closed = true
	if o.following {
		poke(o.wake)
	}
	o.mu.Unlock()
}

// result returns the kept streams and whether each was cut at the cap.
// Call once the pipes are drained.
func (o *liveOutput) result() (stdout, stderr []byte, stdoutCut, stderrCut bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out[0].buf.Bytes(), o.out[1].buf.Bytes(), o.out[0].truncated, o.out[1].truncated
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// followOutput starts pushing copy id's output, from its start, unless it
// is pushed already. A copy the worker does not hold is ignored.
func (a *agent) followOutput(id int64) {
	a.mu.Lock()
	c := a.copies[id]
	a.mu.Unlock()
	if c == nil {
		return
	}
	a.followCopy(c)
}

// followCopy starts c's pusher unless one runs.
func (a *agent) followCopy(c *copyRun) {
	o := c.live
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stop = false
	o.orders++
	if o.following {
		poke(o.wake)
		return
	}
	if o.closed {
		return // ended: its report carries the output
	}
	o.following = true
	if o.wake == nil {
		o.wake = make(chan struct{}, 1)
	}
	go a.pushOutput(c)
}

// unfollowOutput stops pushing copy id's output.
func (a *agent) unfollowOutput(id int64) {
	a.mu.Lock()
	c := a.copies[id]
	a.mu.Unlock()
	if c == nil {
		return
	}
	o := c.live
	o.mu.Lock()
	if o.following {
		o.stop = true
		poke(o.wake)
	}
	o.mu.Unlock()
}

// pushOutput sends c's output to the server as it comes: at once when it
// holds the end of a line, after liveCoalesce when it does not, one push at a time
// (what comes meanwhile goes with the next). It ends when the server says
// stop, or once the copy has ended and everything is sent.
func (a *agent) pushOutput(c *copyRun) {
	o := c.live
	waited, failures := false, 0
	for {
		o.mu.Lock()
		if o.stop || (o.closed && failures >= liveTries) {
			o.following = false
			o.mu.Unlock()
			return
		}
		req := &batchv1.ReportOutputRequest{CopyId: c.id, StdoutOffset: o.sent[0], StderrOffset: o.sent[1],
			StdoutTruncated: o.out[0].truncated, StderrTruncated: o.out[1].truncated}
		req.Stdout = pending(&o.out[0], o.sent[0])
		req.Stderr = pending(&o.out[1], o.sent[1])
		closed, wake, orders := o.closed, o.wake, o.orders
		o.mu.Unlock()
		if len(req.Stdout) == 0 && len(req.Stderr) == 0 {
			if closed {
				o.mu.Lock()
				o.following = false
				o.mu.Unlock()
				return
			}
			select {
			case <-wake:
			case <-a.comm.Done():
				return
			}
			continue
		}
		if !closed && !waited && !hasLine(req.Stdout) && !hasLine(req.Stderr) &&
			len(req.Stdout) < liveChunk && len(req.Stderr) < liveChunk {
			// A partial line: give the rest of it a moment.
			waited = true
			t := time.NewTimer(liveCoalesce)
			select {
			case <-t.C:
			case <-wake:
			case <-a.comm.Done():
			}
			t.Stop()
			continue
		}
		waited = false
		a.mu.Lock()
		req.WorkerId = a.workerID
		_, deadline, _ := wire.LeaseTiming(a.lease)
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(a.comm, deadline)
		resp, err := a.client.ReportOutput(ctx, req)
		cancel()
		if err != nil {
			if a.comm.Err() != nil {
				return
			}
			failures++
			a.log.Debug("push output failed", "copy", c.id, "err", err)
			a.sleep(a.comm, liveRetry)
			continue
		}
		failures = 0
		o.mu.Lock()
		o.sent[0] = min(max(resp.GetStdoutSize(), 0), int64(o.out[0].buf.Len()))
		o.sent[1] = min(max(resp.GetStderrSize(), 0), int64(o.out[1].buf.Len()))
		if resp.GetStop() && o.orders == orders {
			o.stop = true
		}
		o.mu.Unlock()
	}
}

// pending is what b holds past sent, at most liveChunk bytes. The slice
// shares b's array: b only ever appends, so the bytes stay as they are.
func pending(b *capBuffer, sent int64) []byte {
	all := b.buf.Bytes()
	if sent >= int64(len(all)) {
		return nil
	}
	p := all[sent:]
	if len(p) > liveChunk {
		p = p[:liveChunk]
	}
	return p
}

// hasLine says whether p holds the end of a line.
func hasLine(p []byte) bool { return bytes.IndexByte(p, '\n') >= 0 }
