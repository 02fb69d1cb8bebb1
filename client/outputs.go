package client

import (
	"context"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// OutputPiece is one task's output, or a piece of it, from GetOutputs:
// Output.Stdout and Output.Stderr start at StdoutOffset and StderrOffset of
// the task's streams (a task bigger than a page comes in several pieces,
// one after the other).
type OutputPiece struct {
	Index int32
	// Unreadable says why the task has no output to read ("" when it has).
	Unreadable                 string
	Output                     sched.Output
	StdoutOffset, StderrOffset int64
}

// Last says whether this piece ends its task's output.
func (p OutputPiece) Last() bool {
	return p.Unreadable != "" || (p.StdoutOffset+int64(len(p.Output.Stdout)) >= p.Output.StdoutSize &&
		p.StderrOffset+int64(len(p.Output.Stderr)) >= p.Output.StderrSize)
}

// GetOutputsInput selects the outputs to read.
type GetOutputsInput struct {
	Set sched.SetID
	// Indexes are the tasks to read, in order; empty reads the whole set.
	// Consecutive indexes go as a range (a few bytes, not some per task on
	// every page).
	Indexes []int32
	// PageBytes is the server's byte budget per page (0: its default, 4 MiB).
	PageBytes int64
}

// GetOutputs reads many tasks' outputs a page at a time and calls fn with
// each piece in order; an error from fn stops it. Errors: ENOTFOUND (no
// such set, or an index past its end), EINVALID, and fn's.
func (c *Client) GetOutputs(ctx context.Context, in GetOutputsInput, fn func(OutputPiece) error) error {
	token := ""
	indexes, first, count := in.Indexes, int32(0), int32(0)
	if n := len(indexes); n > 0 && indexes[n-1]-indexes[0] == int32(n-1) {
		run := true
		for i := 1; i < n && run; i++ {
			run = indexes[i] == indexes[i-1]+1
		}
		if run {
			indexes, first, count = nil, in.Indexes[0], int32(n)
		}
	}
	for {
		req := &batchv1.GetOutputsRequest{SetId: int64(in.Set), Indexes: indexes, FirstIndex: first, Count: count, MaxBytes: in.PageBytes, PageToken: token}
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetOutputsResponse, error) {
			return c.sets().GetOutputs(ctx, req)
		})
		if err != nil {
			return err
		}
		for _, o := range res.GetOutputs() {
			p := OutputPiece{Index: o.GetIndex(), Unreadable: o.GetUnreadable(), StdoutOffset: o.GetStdoutOffset(), StderrOffset: o.GetStderrOffset(),
				Output: sched.Output{Stdout: o.GetStdout(), Stderr: o.GetStderr(), StdoutSize: o.GetStdoutSize(), StderrSize: o.GetStderrSize(),
					StdoutTruncated: o.GetStdoutTruncated(), StderrTruncated: o.GetStderrTruncated(), ExitCode: o.GetExitCode(),
					TimedOut: o.GetTimedOut(), CPUSeconds: o.GetCpuSeconds(), SlotSeconds: o.GetSlotSeconds(),
					Copy: sched.CopyID(o.GetCopyId()), Worker: sched.WorkerID(o.GetWorker()), State: taskStateFromPB(o.GetState()),
					Files: keptFromPB(o.GetFiles())}}
			if err := fn(p); err != nil {
				return err
			}
		}
		if token = res.GetNextPageToken(); token == "" {
			return nil
		}
	}
}
