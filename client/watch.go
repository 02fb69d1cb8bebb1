// Watching a task set: a stream of snapshots and changes, resumed after a
// cut.

package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"batchd/internal/jitter"
	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// WatchUpdate is one message of a watch: the set's summary and the tasks that
// changed (every task when Snapshot is true).
type WatchUpdate struct {
	Set      sched.TaskSet
	Tasks    []sched.Task
	Snapshot bool
}

// ErrStopWatch, returned by a Watch callback, ends the watch without error.
var ErrStopWatch = errors.New("stop watch")

// Watch streams a set's changes to fn until fn returns an error (ErrStopWatch
// ends it cleanly) or ctx is done. When the stream drops or the server goes
// away, Watch reopens it (the first message after a reopen is a fresh
// snapshot) and gives up after WatchRetryFor without a server. Errors: ENOTFOUND,
// EUNAVAILABLE, ctx.Err(), or fn's error.
func (c *Client) Watch(ctx context.Context, set sched.SetID, fn func(WatchUpdate) error) error {
	return c.WatchTasks(ctx, WatchInput{Set: set}, fn)
}

// WatchInput selects what a watch carries (WatchTaskSetRequest).
type WatchInput struct {
	Set sched.SetID
	// Indexes are the tasks to watch; empty: every task of the set. The
	// snapshot and the changes carry only these, and a change to another
	// task sends nothing.
	Indexes []int32
	// SummaryOnly asks for the set's summary (its counts) and no tasks:
	// every WatchUpdate's Tasks is empty, and one comes whenever a
	// watched task changed. The server reads no task for it.
	SummaryOnly bool
}

// WatchTasks is Watch of what in selects: every task of the set, some
// tasks, or the set's summary only. Errors: Watch's, and EINVALID (a bad
// index).
func (c *Client) WatchTasks(ctx context.Context, in WatchInput, fn func(WatchUpdate) error) error {
	req := &batchv1.WatchTaskSetRequest{SetId: int64(in.Set), Indexes: in.Indexes, SummaryOnly: in.SummaryOnly}
	return c.resumeStream(ctx, func() (got, ended bool, err error) {
		got, err = c.watchOnce(ctx, req, fn)
		return got, false, err
	})
}

// resumeStream runs once (one stream) again and again until it reports
// the end, fails for good, fn stops it (ErrStopWatch) or ctx is done. A
// stream that brought something resets the backoff; without a server for
// WatchRetryFor it gives up with the last error.
func (c *Client) resumeStream(ctx context.Context, once func() (got, ended bool, err error)) error {
	b := jitter.Backoff{Min: minBackoff, Max: maxBackoff}
	wait := b.Next()
	down := time.Time{} // when the server was first found missing
	for {
		got, ended, err := once()
		switch {
		case errors.Is(err, ErrStopWatch):
			return nil
		case ended:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !retryable(err):
			return err
		}
		if got {
			b.Reset()
			down, wait = time.Time{}, b.Next()
		}
		if down.IsZero() {
			down = time.Now()
		}
		if err != nil && time.Since(down)+wait > c.cfg.WatchRetryFor {
			return err
		}
		if c.cfg.ReconnectFunc != nil {
			c.cfg.ReconnectFunc(err, wait)
		}
		if serr := c.cfg.SleepFunc(ctx, wait); serr != nil {
			return serr
		}
		wait = b.Next()
	}
}

// watchOnce runs one stream. It reports whether any message arrived, and a
// nil error when the server ended the stream.
func (c *Client) watchOnce(ctx context.Context, req *batchv1.WatchTaskSetRequest, fn func(WatchUpdate) error) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A stream silent past WatchIdle (the server sends a keepalive well
	// before) is cut here and reported as a drop. The clock stops while fn
	// runs: a slow callback is not a silent server.
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
	stream, err := c.sets().WatchTaskSet(ctx, req)
	if err != nil {
		if silent.Load() {
			return false, &sched.Error{Code: sched.EUNAVAILABLE, Message: fmt.Sprintf("no answer to the watch for %s", idle)}
		}
		return false, fromConnect(err)
	}
	defer stream.Close()
	got := false
	for stream.Receive() {
		if timer != nil && !timer.Stop() {
			break // it fired: ctx is canceled, Err reports it below
		}
		got = true
		m := stream.Msg()
		if err := fn(WatchUpdate{Set: setFromPB(m.GetTaskSet()), Tasks: tasksFromPB(m.GetTasks()), Snapshot: m.GetSnapshot()}); err != nil {
			return got, err
		}
		if timer != nil {
			timer.Reset(idle)
		}
	}
	if silent.Load() {
		return got, &sched.Error{Code: sched.EUNAVAILABLE, Message: fmt.Sprintf("watch stream silent for %s (the server sends a keepalive every 15 s): the connection is taken for dead", idle)}
	}
	err = fromConnect(stream.Err())
	if err != nil && got && ctx.Err() == nil {
		switch sched.ErrorCode(err) {
		case sched.ENOTFOUND, sched.EPERMISSION, sched.EUNAUTHENTICATED:
		default:
			// A stream that worked and then broke (server killed, connection
			// cut mid-message) is a drop, not an answer: reopen it.
			err = &sched.Error{Code: sched.EUNAVAILABLE, Message: "watch stream dropped: " + sched.ErrorMessage(err)}
		}
	}
	return got, err
}
