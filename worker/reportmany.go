// Copies' ends reported many a call (WorkerService.ReportFinishedMany).

package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
)

// reportBatch sends copies' ends in ReportFinishedMany calls, one call at
// a time: the ends that come while a call is out go together in the next
// (a group commit on the worker's side). Each copy's deliver still waits
// for its own answer and handles it as it would a ReportFinished's. At
// 1,024 remote no-exec slots a unary call per end was a quarter of each
// worker's CPU.
type reportBatch struct {
	mu      sync.Mutex
	queue   []*pendingReport
	sending bool
	off     bool // the server answered Unimplemented: one report a call
}

// pendingReport is one copy's end waiting for its call's answer.
type pendingReport struct {
	req  *batchv1.ReportFinishedRequest
	size int
	resp *batchv1.ReportFinishedResponse
	err  error
	done chan struct{}
}

// errReportAlone sends a report through ReportFinished instead.
var errReportAlone = errors.New("report alone")

// report sends one copy's end and returns the server's answer: in a
// ReportFinishedMany call when the transport and the server have it and
// the report is small, else alone.
func (a *agent) report(ctx context.Context, req *batchv1.ReportFinishedRequest) (*batchv1.ReportFinishedResponse, error) {
	if many, ok := a.client.(wire.ManyReporter); ok {
		if size := proto.Size(req); size <= wire.ReportManyItemBytes {
			resp, err := a.reports.submit(ctx, a, many, &pendingReport{req: req, size: size, done: make(chan struct{})})
			if !errors.Is(err, errReportAlone) {
				return resp, err
			}
		}
	}
	return a.client.ReportFinished(ctx, req)
}

// submit queues p, makes sure a goroutine sends the queue, and waits for
// p's answer or ctx. A report whose caller gave up may still be delivered:
// the server answers a replay as it answered the first.
func (b *reportBatch) submit(ctx context.Context, a *agent, many wire.ManyReporter, p *pendingReport) (*batchv1.ReportFinishedResponse, error) {
	b.mu.Lock()
	if b.off {
		b.mu.Unlock()
		return nil, errReportAlone
	}
	b.queue = append(b.queue, p)
	if !b.sending {
		b.sending = true
		go b.loop(a, many)
	}
	b.mu.Unlock()
	select {
	case <-p.done:
		return p.resp, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *reportBatch) loop(a *agent, many wire.ManyReporter) {
	for {
		b.mu.Lock()
		batch, off := b.take(), b.off
		if len(batch) == 0 {
			b.sending = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		if off {
			for _, p := range batch {
				p.err = errReportAlone
				close(p.done)
			}
			continue
		}
		b.send(a, many, batch)
	}
}

// take removes the next call's reports from the queue, in order: those of
// the first one's worker id, at most wire.MaxReportsPerCall, and at most
// wire.ReportManyBytes encoded. Requires mu.
func (b *reportBatch) take() []*pendingReport {
	n, bytes := 0, 64 // the request's own fields
	for _, p := range b.queue {
		// A repeated field's tag and length: at most 4 bytes for a report
		// of up to ReportManyItemBytes.
		if n == wire.MaxReportsPerCall || bytes+p.size+4 > wire.ReportManyBytes || p.req.WorkerId != b.queue[0].req.WorkerId {
			break
		}
		n, bytes = n+1, bytes+p.size+4
	}
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	return batch
}

// send makes one ReportFinishedMany call and hands each report its answer.
func (b *reportBatch) send(a *agent, many wire.ManyReporter, batch []*pendingReport) {
	req := &batchv1.ReportFinishedManyRequest{WorkerId: batch[0].req.WorkerId, Reports: make([]*batchv1.ReportFinishedRequest, len(batch))}
	for i, p := range batch {
		p.req.WorkerId = "" // the call's; each report is the caller's own clone
		req.Reports[i] = p.req
	}
	ctx, cancel := context.WithTimeout(a.comm, max(reportTimeout, a.leaseNow()))
	resp, err := many.ReportFinishedMany(ctx, req)
	cancel()
	if err == nil && len(resp.GetResults()) != len(batch) {
		err = fmt.Errorf("the server answered %d of %d reports", len(resp.GetResults()), len(batch))
	}
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		a.log.Info("the server has no ReportFinishedMany: reporting one copy a call")
		b.mu.Lock()
		b.off = true
		b.mu.Unlock()
		err = errReportAlone
	}
	for i, p := range batch {
		p.req.WorkerId = req.WorkerId
		switch {
		case err != nil:
			p.err = err
		case resp.Results[i].GetCode() != 0:
			r := resp.Results[i]
			p.err = connect.NewError(connect.Code(r.GetCode()), errors.New(r.GetMessage()))
		default:
			p.resp = &batchv1.ReportFinishedResponse{Outcome: resp.Results[i].GetOutcome()}
		}
		close(p.done)
	}
}
