// Following a task's output while it runs: a stream resumed from its last
// copy and offsets after a cut.

package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// OutputChunk is one step of a followed task's output: bytes of each
// stream of copy Copy from their offsets, in order and without gaps.
type OutputChunk struct {
	Copy         sched.CopyID
	Stdout       []byte
	StdoutOffset int64
	Stderr       []byte
	StderrOffset int64
	// Switched: from this chunk on the bytes are another copy's (Copy),
	// from offset 0; Marker says why, for people.
	Switched bool
	Marker   string
	// Ended: the task ended (the last chunk), with its State and, for a
	// task with a result, its exit code and whether a stream was cut at
	// the server's cap.
	Ended           bool
	State           sched.TaskState
	ExitCode        int32
	TimedOut        bool
	StdoutTruncated bool
	StderrTruncated bool
}

// FollowFrom is where FollowOutput starts: the copy the offsets belong to
// (0: whichever copy the server follows) and an offset per stream.
type FollowFrom struct {
	Copy         sched.CopyID
	StdoutOffset int64
	StderrOffset int64
}

// FollowOutput streams task's output to fn from `from` while the task
// runs, and its stored output once it ends, until the chunk with Ended,
// fn's error (ErrStopWatch ends it cleanly) or ctx is done. A stream that
// drops, or stays silent past WatchIdle (the server sends keepalives), is
// resumed from the last copy and offsets received, and given up after
// WatchRetryFor without a server. Errors: ENOTFOUND (not the
// caller's task), EFAILEDPRECONDITION (disclosed or executed, not
// requested), EUNAVAILABLE, ctx.Err(), or fn's error.
func (c *Client) FollowOutput(ctx context.Context, task sched.TaskRef, from FollowFrom, fn func(OutputChunk) error) error {
	return c.resumeStream(ctx, func() (got, ended bool, err error) {
		return c.followOnce(ctx, task, &from, fn)
	})
}

// followOnce runs one stream from *from, moving it past what arrives. It
// reports whether anything arrived and whether the task's end did.
func (c *Client) followOnce(ctx context.Context, task sched.TaskRef, from *FollowFrom, fn func(OutputChunk) error) (got, ended bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A stream silent past WatchIdle (the server sends a keepalive well
	// before) is cut and resumed, as Watch's; the clock stops while fn
	// runs.
	idle := c.cfg.WatchIdle
	if idle == 0 {
		idle = DefaultWatchIdle
	}
	var silent atomic.Bool
	var timer *time.Timer
	if idle > 0 {
		timer = time.AfterFunc(idle, func() { silent.Store(true); cancel() })
		defer timer.Stop()
	}
	stream, err := c.sets().FollowOutput(ctx, &batchv1.FollowOutputRequest{SetId: int64(task.Set), Index: task.Index,
		CopyId: int64(from.Copy), StdoutOffset: from.StdoutOffset, StderrOffset: from.StderrOffset})
	if err != nil {
		if silent.Load() {
			return false, false, &sched.Error{Code: sched.EUNAVAILABLE, Message: fmt.Sprintf("no answer to the follow for %s", idle)}
		}
		return false, false, fromConnect(err)
	}
	defer stream.Close()
	for stream.Receive() {
		if timer != nil && !timer.Stop() {
			break // it fired: the stream is cut and resumed below
		}
		got = true
		m := stream.Msg()
		ch := OutputChunk{Copy: sched.CopyID(m.GetCopyId()), Stdout: m.GetStdout(), StdoutOffset: m.GetStdoutOffset(),
			Stderr: m.GetStderr(), StderrOffset: m.GetStderrOffset(), Switched: m.GetSwitched(), Marker: m.GetMarker(),
			Ended: m.GetEnded(), State: taskStateFromPB(m.GetState()), ExitCode: m.GetExitCode(), TimedOut: m.GetTimedOut(),
			StdoutTruncated: m.GetStdoutTruncated(), StderrTruncated: m.GetStderrTruncated()}
		from.Copy = ch.Copy
		from.StdoutOffset = ch.StdoutOffset + int64(len(ch.Stdout))
		from.StderrOffset = ch.StderrOffset + int64(len(ch.Stderr))
		if err := fn(ch); err != nil {
			return got, ch.Ended, err
		}
		if ch.Ended {
			return got, true, nil
		}
		if timer != nil {
			timer.Reset(idle)
		}
	}
	if silent.Load() {
		return got, false, &sched.Error{Code: sched.EUNAVAILABLE, Message: fmt.Sprintf("output stream silent for %s (the server sends a keepalive every 15 s): the connection is taken for dead", idle)}
	}
	err = fromConnect(stream.Err())
	if err == nil && ctx.Err() == nil {
		// The server ended the stream before the task's end (it is
		// stopping): resume.
		err = &sched.Error{Code: sched.EUNAVAILABLE, Message: "output stream ended before the task did"}
	}
	if err != nil && got && ctx.Err() == nil {
		switch sched.ErrorCode(err) {
		case sched.ENOTFOUND, sched.EPERMISSION, sched.EUNAUTHENTICATED, sched.EFAILEDPRECONDITION, sched.EINVALID:
		default:
			err = &sched.Error{Code: sched.EUNAVAILABLE, Message: "output stream dropped: " + sched.ErrorMessage(err)}
		}
	}
	return got, false, err
}
