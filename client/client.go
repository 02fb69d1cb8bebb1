// Package client is a typed Go client for batchd. It wraps the generated
// Connect clients, takes and returns the sched domain records, maps Connect
// codes back to sched error codes (so callers switch on sched.ErrorCode), and
// retries calls that never reached the server, with an idempotency key for
// Disclose so a retry never creates a second task set.
package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"batchd/internal/jitter"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
)

// Config says where the server is and how hard to try to reach it.
type Config struct {
	// Server is the base URL, e.g. http://localhost:8080. A bare host:port
	// gets http:// in front.
	Server string
	// HTTPClient carries the calls; nil means a client with no overall
	// timeout (watches are long-lived).
	HTTPClient *http.Client
	// RetryFor is how long a call keeps retrying while the server is
	// unreachable (and how long a watch waits for it to come back). Zero
	// means one attempt.
	RetryFor time.Duration
	// WatchRetryFor is how long Watch waits for a server that went away
	// before giving up; zero means RetryFor. A waiting client usually wants
	// more patience than a single call.
	WatchRetryFor time.Duration
	// SleepFunc waits between retries; nil means a timer that honours ctx.
	// Tests replace it to avoid real waits.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// WatchIdle is how long a watch stream may stay silent before Watch
	// takes the connection for dead and opens a new one: the server sends
	// a keepalive after 15 s without changes, so a longer silence means a
	// connection that died without closing (a laptop that slept, a network
	// that changed). Zero means DefaultWatchIdle; negative, never.
	WatchIdle time.Duration
	// ReconnectFunc, when set, is told each time Watch lost its stream and
	// will open a new one after wait (err is why; nil when the server ended
	// the stream), so a waiting person can be told; nil stays silent.
	ReconnectFunc func(err error, wait time.Duration)
}

// DefaultWatchIdle is Config.WatchIdle's default: three of the server's
// 15 s keepalives.
const DefaultWatchIdle = 45 * time.Second

// Client calls a batchd server. It is safe for concurrent use.
//
// Each service's generated client is built on its first call: building
// one makes a Connect client for every method of the service and reads
// its file's full descriptors, which a one-call batchctl run mostly never
// needs (the five of them were about 7% of the CPU time of a `batchctl
// disclose`).
type Client struct {
	cfg     Config
	sets    func() batchv1connect.TaskSetServiceClient
	billing func() batchv1connect.BillingServiceClient
	cluster func() batchv1connect.ClusterServiceClient
	users   func() batchv1connect.UserServiceClient
	control func() batchv1connect.TaskSetControlServiceClient
}

// New returns a client for cfg.Server. It does not dial; the first call does.
func New(cfg Config) *Client {
	base := strings.TrimRight(cfg.Server, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	cfg.Server = base
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if cfg.SleepFunc == nil {
		cfg.SleepFunc = sleep
	}
	if cfg.WatchRetryFor == 0 {
		cfg.WatchRetryFor = cfg.RetryFor
	}
	return &Client{
		cfg: cfg,
		sets: sync.OnceValue(func() batchv1connect.TaskSetServiceClient {
			return batchv1connect.NewTaskSetServiceClient(hc, base)
		}),
		billing: sync.OnceValue(func() batchv1connect.BillingServiceClient {
			return batchv1connect.NewBillingServiceClient(hc, base)
		}),
		cluster: sync.OnceValue(func() batchv1connect.ClusterServiceClient {
			return batchv1connect.NewClusterServiceClient(hc, base)
		}),
		users: sync.OnceValue(func() batchv1connect.UserServiceClient {
			return batchv1connect.NewUserServiceClient(hc, base)
		}),
		control: sync.OnceValue(func() batchv1connect.TaskSetControlServiceClient {
			return batchv1connect.NewTaskSetControlServiceClient(hc, base)
		}),
	}
}

// Server returns the base URL the client calls.
func (c *Client) Server() string { return c.cfg.Server }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Backoff bounds between retries (jitter.Backoff adds jitter below them).
const (
	minBackoff = 200 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// retry runs call until it succeeds, fails with a non-retryable error, or
// the retry budget is spent. Errors come back as *sched.Error.
func retry[T any](ctx context.Context, c *Client, call func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(c.cfg.RetryFor)
	b := jitter.Backoff{Min: minBackoff, Max: maxBackoff}
	wait := b.Next()
	for {
		v, err := call(ctx)
		err = fromConnect(err)
		if err == nil || !retryable(err) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		if serr := c.cfg.SleepFunc(ctx, wait); serr != nil {
			return v, err
		}
		wait = b.Next()
	}
}

// NewIdempotencyKey returns a random key for Disclose.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DiscloseInput says what to disclose.
type DiscloseInput struct {
	// Set is 0 to create a set, or the set to append to.
	Set   sched.SetID
	Name  string
	Tasks []sched.TaskSpec
	// Request requests the new tasks at once.
	Request bool
	// IdempotencyKey makes a retried call harmless; empty means a fresh
	// random key for this call (kept across its retries).
	IdempotencyKey string
	// MaxRunning caps the set's running copies, speculative ones
	// included (0: no cap; on an append, leave the cap as it is).
	MaxRunning int32
	// Retry is the set's retry policy (Retries 0: none; on an append,
	// leave the policy as it is).
	Retry sched.RetryPolicy
	// Stop is the set's stop rule (zero: none; on an append, a zero rule
	// leaves the rule as it is).
	Stop sched.StopRule
	// Array discloses a task array instead of Tasks (nil: none).
	Array *Array
	// After makes a new set wait for these sets or tasks to end (its
	// tasks run once they ended as asked; see sched.Dependency).
	After []sched.Dependency
	// Labels are a new set's labels.
	Labels []sched.Label
	// Route is where a new set's copies may run (zero: anywhere).
	Route sched.Route
}

// Array is a task array: one task per value First, First+Step, ... up to
// Last, each with Spec; a task sees its value as $BATCH_ARRAY_VALUE. The
// server expands it, so it costs a few bytes however many tasks it has.
type Array struct {
	First, Last, Step int64
	Spec              sched.TaskSpec
}

// DiscloseResult is the server's answer to Disclose.
type DiscloseResult struct {
	Set        sched.TaskSet
	FirstIndex int32
	Count      int32
	// Replayed is true when the server had already seen the key.
	Replayed bool
	// UnknownRoute is true when the new set is routed to a pool or
	// partition under which no worker has ever registered.
	UnknownRoute bool
}

// Disclose creates a task set or appends tasks to one. A big set (over
// discloseUnaryBytes) goes through the server's DiscloseStream in chunks,
// so that neither side holds it twice; the idempotency key covers the
// whole stream, so a retry after a broken stream discloses once. Errors:
// EINVALID for an empty set or argv, ENOTFOUND for an unknown set,
// EFAILEDPRECONDITION for a canceled set, ERESOURCEEXHAUSTED past the
// server's limits, EUNAVAILABLE when the server cannot be reached within
// RetryFor.
func (c *Client) Disclose(ctx context.Context, in DiscloseInput) (DiscloseResult, error) {
	key := in.IdempotencyKey
	if key == "" {
		key = NewIdempotencyKey()
	}
	if in.Array == nil && specBytes(in.Tasks) > discloseUnaryBytes {
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.DiscloseStreamResponse, error) {
			return c.discloseStream(ctx, in, key)
		})
		if err != nil {
			return DiscloseResult{}, err
		}
		return DiscloseResult{Set: setFromPB(res.GetTaskSet()), FirstIndex: res.GetFirstIndex(), Count: res.GetCount(),
			Replayed: res.GetReplayed(), UnknownRoute: res.GetUnknownRoute()}, nil
	}
	req := &batchv1.DiscloseRequest{
		SetId:          int64(in.Set),
		Name:           in.Name,
		IdempotencyKey: key,
		Request:        in.Request,
		MaxRunning:     in.MaxRunning,
		Retry:          retryToPB(in.Retry),
		Stop:           stopToPB(in.Stop),
		After:          depsToPB(in.After),
		Labels:         labelsToPB(in.Labels),
		Pool:           in.Route.Pool,
		Partition:      in.Route.Partition,
	}
	for _, t := range in.Tasks {
		req.Tasks = append(req.Tasks, specToPB(t))
	}
	if a := in.Array; a != nil {
		req.Array = &batchv1.TaskArray{First: a.First, Last: a.Last, Step: a.Step, Spec: specToPB(a.Spec)}
	}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.DiscloseResponse, error) {
		return c.sets().Disclose(ctx, req)
	})
	if err != nil {
		return DiscloseResult{}, err
	}
	return DiscloseResult{
		Set:        setFromPB(res.GetTaskSet()),
		FirstIndex: res.GetFirstIndex(),
		Count:      res.GetCount(),
		Replayed:   res.GetReplayed(),

		UnknownRoute: res.GetUnknownRoute(),
	}, nil
}

// Disclose's sizes: a set whose specs take more than discloseUnaryBytes
// goes in a stream of messages of about discloseChunkBytes (the server
// takes at most 16 MiB in one Disclose and 8 MiB in one message of a
// stream).
const (
	discloseUnaryBytes = 4 << 20
	discloseChunkBytes = 1 << 20
)

// specBytes is about how many bytes specs take on the wire.
func specBytes(specs []sched.TaskSpec) int {
	n := 0
	for _, s := range specs {
		n += 32 + len(s.Dir)
		for _, a := range s.Argv {
			n += len(a) + 2
		}
		for k, v := range s.Env {
			n += len(k) + len(v) + 6
		}
	}
	return n
}

// discloseStream sends in's tasks, converted chunk by chunk, in one
// DiscloseStream. The first message carries the set, name, key and
// request flag. A stream that fails is cut (ctx), so the server stores
// nothing of it.
func (c *Client) discloseStream(ctx context.Context, in DiscloseInput, key string) (*batchv1.DiscloseStreamResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.sets().DiscloseStream(ctx)
	if err != nil {
		return nil, err
	}
	msg := &batchv1.DiscloseStreamRequest{SetId: int64(in.Set), Name: in.Name, IdempotencyKey: key, Request: in.Request, MaxRunning: in.MaxRunning, Retry: retryToPB(in.Retry),
		Stop: stopToPB(in.Stop), After: depsToPB(in.After), Labels: labelsToPB(in.Labels), Pool: in.Route.Pool, Partition: in.Route.Partition}
	size := 0
	for i, t := range in.Tasks {
		msg.Tasks = append(msg.Tasks, specToPB(t))
		size += specBytes(in.Tasks[i : i+1])
		if size < discloseChunkBytes && i < len(in.Tasks)-1 {
			continue
		}
		if err := st.Send(msg); err != nil {
			break // the server has answered already: CloseAndReceive says what
		}
		msg, size = &batchv1.DiscloseStreamRequest{}, 0
	}
	return st.CloseAndReceive()
}

// RequestResult is the server's answer to Request.
type RequestResult struct {
	Set            sched.TaskSet
	Requested      int32
	FinishedAtOnce int32
	Unchanged      int32
	// Tasks are the named tasks after the call (empty for a whole set).
	Tasks []sched.Task
}

// Request requests the named tasks of a set (RequestAll requests the whole
// set). Requesting twice is harmless, so the call is retried like the
// others. Errors: EINVALID when indexes is empty, ENOTFOUND for an unknown
// set or index, EFAILEDPRECONDITION for a canceled task.
func (c *Client) Request(ctx context.Context, set sched.SetID, indexes []int32) (RequestResult, error) {
	return c.request(ctx, &batchv1.RequestRequest{SetId: int64(set), Indexes: indexes})
}

// RequestAll requests every unrequested task of a set, as Request does.
func (c *Client) RequestAll(ctx context.Context, set sched.SetID) (RequestResult, error) {
	return c.request(ctx, &batchv1.RequestRequest{SetId: int64(set), All: true})
}

func (c *Client) request(ctx context.Context, req *batchv1.RequestRequest) (RequestResult, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.RequestResponse, error) {
		return c.sets().Request(ctx, req)
	})
	if err != nil {
		return RequestResult{}, err
	}
	return RequestResult{
		Set:            setFromPB(res.GetTaskSet()),
		Requested:      res.GetRequested(),
		FinishedAtOnce: res.GetFinishedAtOnce(),
		Unchanged:      res.GetUnchanged(),
		Tasks:          tasksFromPB(res.GetTasks()),
	}, nil
}

// CancelResult says what Cancel did.
type CancelResult struct {
	Set             sched.TaskSet
	Canceled        int32
	Stopped         int32
	AlreadyCanceled int32
	Unchanged       int32
}

// Cancel cancels the named tasks of a set (CancelAll cancels the rest of
// the set). Cancelling twice is a no-op that says so (AlreadyCanceled), so
// the call is retried like the others; a retry after a lost answer counts
// the tasks it canceled as AlreadyCanceled. Errors: EINVALID when indexes
// is empty, ENOTFOUND for an unknown set or index.
func (c *Client) Cancel(ctx context.Context, set sched.SetID, indexes []int32) (CancelResult, error) {
	return c.cancel(ctx, &batchv1.CancelRequest{SetId: int64(set), Indexes: indexes})
}

// CancelAll cancels every unfinished task of a set, requested ones
// included, as Cancel does.
func (c *Client) CancelAll(ctx context.Context, set sched.SetID) (CancelResult, error) {
	return c.cancel(ctx, &batchv1.CancelRequest{SetId: int64(set), All: true})
}

func (c *Client) cancel(ctx context.Context, req *batchv1.CancelRequest) (CancelResult, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.CancelResponse, error) {
		return c.sets().Cancel(ctx, req)
	})
	if err != nil {
		return CancelResult{}, err
	}
	return CancelResult{
		Set:             setFromPB(res.GetTaskSet()),
		Canceled:        res.GetCanceled(),
		Stopped:         res.GetStopped(),
		AlreadyCanceled: res.GetAlreadyCanceled(),
		Unchanged:       res.GetUnchanged(),
	}, nil
}

// RetryResult is the server's answer to Retry.
type RetryResult struct {
	Set sched.TaskSet
	// Retried are the indexes of the tasks retried (each now in its next
	// attempt).
	Retried []int32
	// Unchanged counts named tasks that did not fail.
	Unchanged int32
	Tasks     []sched.Task // the named tasks after the call
}

// Retry runs the named tasks of a set again in place (same index, the next
// attempt) if they failed, timed out or were canceled (RetryAll retries
// every such task of the set). It is not retried on a lost answer: a
// second call would retry an attempt that may already have failed again.
// Errors: EINVALID when indexes is empty, ENOTFOUND for an unknown set or
// index, EFAILEDPRECONDITION when the one task named did not fail.
func (c *Client) Retry(ctx context.Context, set sched.SetID, indexes []int32) (RetryResult, error) {
	return c.retryTasks(ctx, &batchv1.RetryRequest{SetId: int64(set), Indexes: indexes})
}

// RetryAll retries every failed, timed-out or canceled task of a set, as
// Retry does.
func (c *Client) RetryAll(ctx context.Context, set sched.SetID) (RetryResult, error) {
	return c.retryTasks(ctx, &batchv1.RetryRequest{SetId: int64(set), All: true})
}

func (c *Client) retryTasks(ctx context.Context, req *batchv1.RetryRequest) (RetryResult, error) {
	res, err := c.sets().Retry(ctx, req)
	if err != nil {
		return RetryResult{}, fromConnect(err)
	}
	return RetryResult{Set: setFromPB(res.GetTaskSet()), Retried: res.GetRetried(), Unchanged: res.GetUnchanged(),
		Tasks: tasksFromPB(res.GetTasks())}, nil
}

// GetTask returns one task in detail: every copy of every attempt and its
// earlier attempts. Errors: ENOTFOUND.
func (c *Client) GetTask(ctx context.Context, task sched.TaskRef) (sched.TaskSet, sched.Task, error) {
	req := &batchv1.GetTaskRequest{SetId: int64(task.Set), Index: task.Index}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetTaskResponse, error) {
		return c.sets().GetTask(ctx, req)
	})
	if err != nil {
		return sched.TaskSet{}, sched.Task{}, err
	}
	return setFromPB(res.GetTaskSet()), taskFromPB(res.GetTask()), nil
}

// GetTaskSetInput selects a page of a set's tasks.
type GetTaskSetInput struct {
	Set       sched.SetID
	PageSize  int32
	PageToken string
	States    []sched.TaskState
}

// TaskSetPage is a set's summary and one page of its tasks.
type TaskSetPage struct {
	Set           sched.TaskSet
	Tasks         []sched.Task
	NextPageToken string
}

// GetTaskSet returns a set and a page of its tasks. Errors: ENOTFOUND.
func (c *Client) GetTaskSet(ctx context.Context, in GetTaskSetInput) (TaskSetPage, error) {
	req := &batchv1.GetTaskSetRequest{SetId: int64(in.Set), PageSize: in.PageSize, PageToken: in.PageToken}
	for _, s := range in.States {
		if !s.Valid() {
			return TaskSetPage{}, sched.Errorf(sched.EINVALID, "unknown task state %q (want disclosed, executed, requested, finished or canceled)", s)
		}
		req.States = append(req.States, taskStateToPB(s))
	}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetTaskSetResponse, error) {
		return c.sets().GetTaskSet(ctx, req)
	})
	if err != nil {
		return TaskSetPage{}, err
	}
	return TaskSetPage{
		Set:           setFromPB(res.GetTaskSet()),
		Tasks:         tasksFromPB(res.GetTasks()),
		NextPageToken: res.GetNextPageToken(),
	}, nil
}

// TaskSetList is one page of the caller's task sets, newest first.
type TaskSetList struct {
	Sets          []sched.TaskSet
	NextPageToken string
}

// ListTaskSets returns a page of the caller's task sets.
func (c *Client) ListTaskSets(ctx context.Context, pageSize int32, pageToken string) (TaskSetList, error) {
	req := &batchv1.ListTaskSetsRequest{PageSize: pageSize, PageToken: pageToken}
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.ListTaskSetsResponse, error) {
		return c.sets().ListTaskSets(ctx, req)
	})
	if err != nil {
		return TaskSetList{}, err
	}
	out := TaskSetList{NextPageToken: res.GetNextPageToken()}
	for _, s := range res.GetTaskSets() {
		out.Sets = append(out.Sets, setFromPB(s))
	}
	return out, nil
}

// maxOutputChunk is the most GetOutput returns per call (the server's cap).
const maxOutputChunk = 4 << 20

// GetOutput returns a requested task's whole output, reading it in chunks.
// Errors: ENOTFOUND, and EFAILEDPRECONDITION for a task not yet requested or
// not yet finished.
func (c *Client) GetOutput(ctx context.Context, task sched.TaskRef) (sched.Output, error) {
	return c.GetAttemptOutput(ctx, task, 0)
}

// GetAttemptOutput is GetOutput for attempt number attempt of the task (0:
// its current attempt). Errors: as GetOutput; ENOTFOUND for an attempt the
// task never had, EFAILEDPRECONDITION for an earlier attempt that was not
// requested (it executed while disclosed) or has no output.
func (c *Client) GetAttemptOutput(ctx context.Context, task sched.TaskRef, attempt int32) (sched.Output, error) {
	var out sched.Output
	for offset := int64(0); ; {
		req := &batchv1.GetOutputRequest{SetId: int64(task.Set), Index: task.Index, Offset: offset, Limit: maxOutputChunk, Attempt: attempt}
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetOutputResponse, error) {
			return c.sets().GetOutput(ctx, req)
		})
		if err != nil {
			return sched.Output{}, err
		}
		out.Stdout = append(out.Stdout, res.GetStdout()...)
		out.Stderr = append(out.Stderr, res.GetStderr()...)
		out.StdoutSize, out.StderrSize = res.GetStdoutSize(), res.GetStderrSize()
		out.StdoutTruncated, out.StderrTruncated = res.GetStdoutTruncated(), res.GetStderrTruncated()
		out.ExitCode, out.TimedOut = res.GetExitCode(), res.GetTimedOut()
		out.CPUSeconds, out.SlotSeconds = res.GetCpuSeconds(), res.GetSlotSeconds()
		out.Copy, out.Worker = sched.CopyID(res.GetCopyId()), sched.WorkerID(res.GetWorker())
		out.State = taskStateFromPB(res.GetState())
		out.Attempt = res.GetAttempt()
		if offset == 0 {
			out.Files = keptFromPB(res.GetFiles())
		}
		// Both streams are read from the same offset; a stream that has
		// ended returns fewer bytes than the other, and the server may
		// return less than asked, so advance by what the longer one gave.
		n := int64(max(len(res.GetStdout()), len(res.GetStderr())))
		offset += n
		if n == 0 || (int64(len(out.Stdout)) >= out.StdoutSize && int64(len(out.Stderr)) >= out.StderrSize) {
			return out, nil
		}
	}
}
