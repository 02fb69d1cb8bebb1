package server

import (
	"context"
	"errors"
	"fmt"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// GetOutputs returns a page of many tasks' outputs (store.GetOutputs),
// for the caller's set (any set for an admin).
func (h taskSetHandler) GetOutputs(ctx context.Context, req *batchv1.GetOutputsRequest) (*batchv1.GetOutputsResponse, error) {
	s := h.s
	if len(req.Indexes) > store.MaxIndexesPerCall {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(req.Indexes), store.MaxIndexesPerCall)
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return nil, err
	}
	from, err := parseOutputsToken(req.PageToken)
	if err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	in := store.OutputsInput{Owner: owner, Set: sched.SetID(req.SetId), MaxBytes: req.MaxBytes, From: from, First: req.FirstIndex, Count: req.Count}
	if len(req.Indexes) > 0 {
		if req.FirstIndex != 0 || req.Count != 0 {
			return nil, sched.Errorf(sched.EINVALID, "give indexes or a range (first_index, count), not both")
		}
		in.Indexes = req.Indexes
	}
	page, err := s.db.GetOutputs(ctx, in)
	if err != nil {
		return nil, err
	}
	out := &batchv1.GetOutputsResponse{Outputs: make([]*batchv1.TaskOutput, 0, len(page.Outputs))}
	if page.Next != nil {
		out.NextPageToken = fmt.Sprintf("o%d.%d.%d", page.Next.Pos, page.Next.StdoutOff, page.Next.StderrOff)
	}
	for _, o := range page.Outputs {
		r := o.Output
		out.Outputs = append(out.Outputs, &batchv1.TaskOutput{Index: o.Index, State: taskStateToProto[r.State], Unreadable: o.Unreadable,
			Stdout: r.Stdout, Stderr: r.Stderr, StdoutOffset: o.StdoutOffset, StderrOffset: o.StderrOffset,
			StdoutSize: r.StdoutSize, StderrSize: r.StderrSize, StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
			ExitCode: r.ExitCode, TimedOut: r.TimedOut, CpuSeconds: r.CPUSeconds, SlotSeconds: r.SlotSeconds,
			CopyId: int64(r.Copy), Worker: string(r.Worker), Files: keptToProto(r.Files)})
	}
	return out, nil
}

// parseOutputsToken reads a GetOutputs page token ("": the start).
func parseOutputsToken(tok string) (store.OutputsCursor, error) {
	var c store.OutputsCursor
	if tok == "" {
		return c, nil
	}
	var rest string
	if n, _ := fmt.Sscanf(tok, "o%d.%d.%d%s", &c.Pos, &c.StdoutOff, &c.StderrOff, &rest); n != 3 ||
		fmt.Sprintf("o%d.%d.%d", c.Pos, c.StdoutOff, c.StderrOff) != tok {
		return c, sched.Errorf(sched.EINVALID, "page_token %q is not one GetOutputs gave: start again without one", tok)
	}
	return c, nil
}
