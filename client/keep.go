package client

import (
	"context"
	"io"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// keptFromPB converts a result's list of kept files.
func keptFromPB(files []*batchv1.KeptFile) []sched.KeptFile {
	if len(files) == 0 {
		return nil
	}
	out := make([]sched.KeptFile, len(files))
	for i, f := range files {
		out[i] = sched.KeptFile{Path: f.GetPath(), Size: f.GetSize(), Mode: f.GetMode(), NotKept: f.GetNotKept()}
	}
	return out
}

// GetKeptFile writes the file at path that attempt (0: the current one)
// of a requested task kept to w, reading it in chunks, and returns what
// the server says of it. Errors: as GetOutput; ENOTFOUND (no such kept
// file), EFAILEDPRECONDITION (listed, but not kept: the reason), and w's.
func (c *Client) GetKeptFile(ctx context.Context, task sched.TaskRef, attempt int32, path string, w io.Writer) (sched.KeptFile, error) {
	var f sched.KeptFile
	for offset := int64(0); ; {
		req := &batchv1.GetKeptFileRequest{SetId: int64(task.Set), Index: task.Index, Attempt: attempt, Path: path, Offset: offset, Limit: maxOutputChunk}
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetKeptFileResponse, error) {
			return c.sets().GetKeptFile(ctx, req)
		})
		if err != nil {
			return f, err
		}
		fp := res.GetFile()
		f = sched.KeptFile{Path: fp.GetPath(), Size: fp.GetSize(), Mode: fp.GetMode()}
		if attempt == 0 {
			// Later chunks of the same attempt, even if the task is
			// retried meanwhile.
			attempt = res.GetAttempt()
		}
		n := len(res.GetContent())
		if _, err := w.Write(res.GetContent()); err != nil {
			return f, err
		}
		offset += int64(n)
		if n == 0 || offset >= f.Size {
			return f, nil
		}
	}
}

// KeptFiles lists the files attempt (0: the current one) of a requested
// task kept, or refused with the reason, without reading its output.
// Errors: as GetOutput.
func (c *Client) KeptFiles(ctx context.Context, task sched.TaskRef, attempt int32) ([]sched.KeptFile, error) {
	req := &batchv1.GetOutputRequest{SetId: int64(task.Set), Index: task.Index, Limit: 1, Attempt: attempt}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetOutputResponse, error) {
		return c.sets().GetOutput(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	return keptFromPB(res.GetFiles()), nil
}
