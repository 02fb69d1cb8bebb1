package server

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"

	"batchd/internal/wire"
	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// ReportFinishedMany records several copies' ends of one worker. Each
// report is checked and answered as ReportFinished alone would answer it,
// and the valid ones join the group commit together, so that a worker
// whose copies end faster than its calls return pays one call, one
// HTTP/2 stream and one wait for many ends: at 1,024 remote slots a
// unary call per end was a quarter of each worker's CPU and an HTTP/2
// stream, its headers and a goroutine per task in the server.
func (h workerHandler) ReportFinishedMany(ctx context.Context, req *batchv1.ReportFinishedManyRequest) (*batchv1.ReportFinishedManyResponse, error) {
	s := h.s
	defer s.lm.observeReport(time.Now())
	if req.WorkerId == "" {
		return nil, sched.Errorf(sched.EINVALID, "worker_id is required")
	}
	if len(req.Reports) > wire.MaxReportsPerCall {
		return nil, sched.Errorf(sched.EINVALID, "%d reports in one call; at most %d", len(req.Reports), wire.MaxReportsPerCall)
	}
	if err := s.checkWorker(ctx, sched.WorkerID(req.WorkerId)); err != nil {
		return nil, err
	}
	results := make([]*batchv1.ReportResult, len(req.Reports))
	calls := make([]*finishCall, 0, len(req.Reports))
	at := make([]int, 0, len(req.Reports))
	for i, r := range req.Reports {
		if r.WorkerId != "" && r.WorkerId != req.WorkerId {
			results[i] = s.refusal(ctx, sched.Errorf(sched.EINVALID, "a report of worker %q in a call of worker %q", r.WorkerId, req.WorkerId))
			continue
		}
		r.WorkerId = req.WorkerId
		in, err := s.finishInput(r)
		if err != nil {
			results[i] = s.refusal(ctx, err)
			continue
		}
		calls = append(calls, &finishCall{in: in, done: make(chan struct{})})
		at = append(at, i)
	}
	s.finishQ.addAll(calls, s.finishBatch)
	for j, c := range calls {
		<-c.done
		if c.err != nil {
			results[at[j]] = s.refusal(ctx, c.err)
			continue
		}
		results[at[j]] = &batchv1.ReportResult{Outcome: reportOutcome(c.res)}
	}
	return &batchv1.ReportFinishedManyResponse{Results: results}, nil
}

// refusal is one report's error as the worker hears it: the code and
// message ReportFinished alone would have failed with (connectError).
func (s *Server) refusal(ctx context.Context, err error) *batchv1.ReportResult {
	var ce *connect.Error
	if !errors.As(s.connectError(ctx, err), &ce) {
		return &batchv1.ReportResult{Code: uint32(connect.CodeInternal), Message: "internal error"}
	}
	return &batchv1.ReportResult{Code: uint32(ce.Code()), Message: ce.Message()}
}
