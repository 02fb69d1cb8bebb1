package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// taskSetHandler implements TaskSetService.
type taskSetHandler struct{ s *Server }

// Disclose validates the specs, stores them (or replays the idempotency
// key's first answer; the same key with other content is AlreadyExists),
// tells the scheduler and runs it.
func (h taskSetHandler) Disclose(ctx context.Context, req *batchv1.DiscloseRequest) (*batchv1.DiscloseResponse, error) {
	s := h.s
	if len(req.Tasks) == 0 && req.Array == nil && !(req.SetId != 0 && (req.MaxRunning > 0 || req.GetRetry().GetRetries() > 0 || !stopFromProto(req.Stop).IsZero())) {
		return nil, sched.Errorf(sched.EINVALID, "no tasks: a disclose needs at least one task (or, appending to a set, a max_running, retry policy or stop rule to change; UpdateTaskSet changes any of them)")
	}
	if len(req.Tasks) > store.MaxTasksPerCall {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d tasks in one call; the limit is %d: disclose in several calls (append with set_id)", len(req.Tasks), store.MaxTasksPerCall)
	}
	hd := discloseHeader{setID: req.SetId, name: req.Name, key: req.IdempotencyKey, request: req.Request, maxRunning: req.MaxRunning, retry: retryFromProto(req.Retry),
		stop: stopFromProto(req.Stop), route: sched.Route{Pool: req.Pool, Partition: req.Partition}}
	if err := hd.setDeps(req.After, req.Labels); err != nil {
		return nil, err
	}
	if err := hd.check(); err != nil {
		return nil, err
	}
	arr, err := arrayFromProto(req.Array, len(req.Tasks))
	if err != nil {
		return nil, err
	}
	specs, err := appendSpecs(make([]sched.TaskSpec, 0, len(req.Tasks)), req.Tasks)
	if err != nil {
		return nil, err
	}
	res, err := s.disclose(ctx, hd, specs, arr)
	if err != nil {
		return nil, err
	}
	return &batchv1.DiscloseResponse{TaskSet: setToProto(res.Set), FirstIndex: res.FirstIndex, Count: res.Count, Replayed: res.Replayed,
		UnknownRoute: s.unknownRoute(ctx, res)}, nil
}

// DiscloseStream is Disclose for big sets: it converts each chunk to specs
// as it arrives (dropping the message), so the set is never in memory twice,
// and stores them in one transaction once the client has closed its side.
// A stream that breaks before then stores nothing, and the store's write
// lock is not held while the client uploads.
func (h taskSetHandler) DiscloseStream(ctx context.Context, stream *connect.ClientStream[batchv1.DiscloseStreamRequest]) (*batchv1.DiscloseStreamResponse, error) {
	s := h.s
	var (
		hd    discloseHeader
		specs []sched.TaskSpec
		arr   *store.TaskArray
		size  int  // bytes of the messages so far
		tight bool // GC.Tighten is in force
	)
	for first := true; stream.Receive(); first = false {
		m := stream.Msg()
		if size += proto.Size(m); size > tightGCBytes && !tight {
			tight = true
			defer s.cfg.GC.Tighten()()
		}
		if first {
			hd = discloseHeader{setID: m.SetId, name: m.Name, key: m.IdempotencyKey, request: m.Request, maxRunning: m.MaxRunning, retry: retryFromProto(m.Retry),
				stop: stopFromProto(m.Stop), route: sched.Route{Pool: m.Pool, Partition: m.Partition}}
			if err := hd.setDeps(m.After, m.Labels); err != nil {
				return nil, err
			}
			if err := hd.check(); err != nil {
				return nil, err
			}
			var err error
			if arr, err = arrayFromProto(m.Array, len(m.Tasks)); err != nil {
				return nil, err
			}
		} else if m.SetId != 0 || m.Name != "" || m.IdempotencyKey != "" || m.Request || m.Array != nil || len(m.After) > 0 || len(m.Labels) > 0 ||
			m.Pool != "" || m.Partition != "" {
			return nil, sched.Errorf(sched.EINVALID, "only the first message of a DiscloseStream carries set_id, name, idempotency_key, request, array, after, labels, pool and partition")
		} else if arr != nil && len(m.Tasks) > 0 {
			return nil, sched.Errorf(sched.EINVALID, "give tasks or an array, not both")
		}
		if len(specs)+len(m.Tasks) > store.MaxTasksPerCall {
			return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "more than %d tasks in one disclose: disclose in several calls (append with set_id)", store.MaxTasksPerCall)
		}
		from := len(specs)
		var err error
		if specs, err = appendSpecs(specs, m.Tasks); err != nil {
			return nil, err
		}
		compact(specs[from:])
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if len(specs) == 0 && arr == nil {
		return nil, sched.Errorf(sched.EINVALID, "no tasks: a disclose needs at least one task")
	}
	res, err := s.disclose(ctx, hd, specs, arr)
	if err != nil {
		return nil, err
	}
	return &batchv1.DiscloseStreamResponse{TaskSet: setToProto(res.Set), FirstIndex: res.FirstIndex, Count: res.Count, Replayed: res.Replayed,
		UnknownRoute: s.unknownRoute(ctx, res)}, nil
}

// tightGCBytes is the size past which a DiscloseStream tightens the
// garbage collector for the rest of the call (GCPolicy.Tighten).
const tightGCBytes = 16 << 20

// discloseHeader is what a disclose says besides its tasks.
type discloseHeader struct {
	setID   int64
	name    string
	key     string
	request bool
	// maxRunning caps the set's running copies (0: none, or unchanged).
	maxRunning int32
	// retry is the set's retry policy (Retries 0: none, or unchanged).
	retry sched.RetryPolicy
	// stop is the set's stop rule (zero: none, or unchanged).
	stop sched.StopRule
	// after and labels are a new set's dependencies and labels.
	after  []sched.Dependency
	labels []store.Label
	// route is where a new set's copies may run (zero: anywhere).
	route sched.Route
}

// setDeps converts and checks a disclose's dependencies and labels
// (EINVALID), which only a new set takes.
func (hd *discloseHeader) setDeps(after []*batchv1.Dependency, labels []*batchv1.Label) (err error) {
	if hd.after, err = depsFromProto(after); err != nil {
		return err
	}
	if hd.labels, err = labelsFromProto(labels); err != nil {
		return err
	}
	if hd.setID != 0 && (len(hd.after) > 0 || len(hd.labels) > 0) {
		return sched.Errorf(sched.EINVALID, "after and labels are given when a set is created, not on an append")
	}
	return nil
}

// check bounds the name and the key and refuses a negative set id
// (EINVALID).
func (hd discloseHeader) check() error {
	if len(hd.name) > store.MaxNameBytes || len(hd.key) > store.MaxIdempotencyKeyBytes {
		return sched.Errorf(sched.EINVALID, "name or idempotency key too long (limits %d and %d bytes)", store.MaxNameBytes, store.MaxIdempotencyKeyBytes)
	}
	if hasNUL(hd.name) || hasNUL(hd.key) {
		return sched.Errorf(sched.EINVALID, "the name or idempotency key holds a NUL byte")
	}
	if hd.maxRunning < 0 {
		return sched.Errorf(sched.EINVALID, "max_running = %d must not be negative (0 = no cap)", hd.maxRunning)
	}
	if err := hd.retry.Validate(); err != nil {
		return err
	}
	if err := hd.route.Validate(); err != nil {
		return err
	}
	return checkSetID("set_id", hd.setID)
}

// arrayFromProto converts a disclosed array (nil: none); ntasks is the
// number of tasks the same call gives, which must be 0 beside an array.
func arrayFromProto(p *batchv1.TaskArray, ntasks int) (*store.TaskArray, error) {
	if p == nil {
		return nil, nil
	}
	if ntasks > 0 {
		return nil, sched.Errorf(sched.EINVALID, "give tasks or an array, not both")
	}
	spec, err := specFromProto(0, p.Spec)
	if err != nil {
		return nil, sched.Errorf(sched.ErrorCode(err), "array: %s", sched.ErrorMessage(err))
	}
	a, err := store.NewTaskArray(p.First, p.Last, p.Step, spec)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// appendSpecs converts tasks to specs and appends them to specs (tasks are
// numbered from len(specs) in errors).
func appendSpecs(specs []sched.TaskSpec, tasks []*batchv1.TaskSpec) ([]sched.TaskSpec, error) {
	for _, t := range tasks {
		spec, err := specFromProto(len(specs), t)
		if err != nil {
			return specs, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// compact moves the arguments and directories of specs into one string and
// their argv into one slice, so that a chunk of a DiscloseStream holds two
// allocations instead of a few per task: the decoded message's many small
// strings then die together, freeing whole spans, and the set costs about
// its size in memory rather than that plus each task's rounding and the
// spans its garbage left half full.
func compact(specs []sched.TaskSpec) {
	n, args := 0, 0
	for _, sp := range specs {
		n += len(sp.Dir)
		for _, a := range sp.Argv {
			n += len(a)
		}
		args += len(sp.Argv)
	}
	var b strings.Builder
	b.Grow(n)
	for _, sp := range specs {
		b.WriteString(sp.Dir)
		for _, a := range sp.Argv {
			b.WriteString(a)
		}
	}
	all, argv := b.String(), make([]string, 0, args)
	off := 0
	take := func(l int) string { off += l; return all[off-l : off] }
	for i := range specs {
		sp := &specs[i]
		sp.Dir = take(len(sp.Dir))
		from := len(argv)
		for _, a := range sp.Argv {
			argv = append(argv, take(len(a)))
		}
		sp.Argv = argv[from:len(argv):len(argv)]
	}
}

// disclose stores specs (or replays the idempotency key's first answer),
// tells the scheduler and runs it: the part Disclose and DiscloseStream
// share.
func (s *Server) disclose(ctx context.Context, hd discloseHeader, specs []sched.TaskSpec, arr *store.TaskArray) (store.DiscloseResult, error) {
	if err := s.stopping(); err != nil {
		return store.DiscloseResult{}, err
	}
	if err := s.dirs.checkSpecs(specs, arr); err != nil {
		return store.DiscloseResult{}, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(hd.setID))
	if err != nil {
		return store.DiscloseResult{}, err
	}
	var res store.DiscloseResult
	in := store.DiscloseInput{Owner: owner, SetID: sched.SetID(hd.setID), Name: hd.name,
		Tasks: specs, Array: arr, IdempotencyKey: hd.key, Request: hd.request, MaxRunning: hd.maxRunning, Retry: hd.retry,
		Stop: hd.stop, After: hd.after, Labels: hd.labels, Route: hd.route}
	if hd.key != "" {
		// The key with other content is AlreadyExists (db.Disclose);
		// hashed outside the lock, as 200,000 specs take a while.
		in.RequestHash = in.Hash()
	}
	n := len(specs)
	if arr != nil {
		n = int(arr.Count)
	}
	if s.db.Chunked(in) {
		return s.discloseStaged(ctx, hd, in, n)
	}
	s.apiWriteWork(n, func() {
		if err = s.admitDisclose(ctx, owner, hd, in, n); err != nil {
			return
		}
		// What the scheduler needs of the specs, taken now so that the specs
		// can go once they are stored.
		infos := taskInfos(specs, arr, n)
		res, err = s.db.Disclose(ctx, in)
		specs, in.Tasks = nil, nil
		if err != nil || res.Replayed {
			return
		}
		s.disclosed(ctx, hd, owner, res, infos)
	})
	return res, err
}

// admitDisclose applies the caps (checkLoad, checkCapacity) to a disclose
// of n tasks; a replay of a disclose already stored passes them. Call
// within apiWrite.
func (s *Server) admitDisclose(ctx context.Context, owner string, hd discloseHeader, in store.DiscloseInput, n int) error {
	if err := s.checkLoad(ctx, owner, hd.setID == 0, n); err != nil {
		// A retry of a disclose already stored is a replay, which the
		// caps must not refuse; the key is looked up only then, not
		// before every disclose.
		if hd.key == "" {
			return err
		}
		replay, kerr := s.db.IdempotencyKeyKnown(ctx, owner, hd.key, in.RequestHash)
		if kerr != nil {
			return kerr
		}
		if !replay {
			return err
		}
	}
	return s.checkCapacity(in.Tasks, in.Array)
}

// taskInfos is what the scheduler needs of n specs (or of arr's tasks).
func taskInfos(specs []sched.TaskSpec, arr *store.TaskArray, n int) []sched.TaskInfo {
	infos := make([]sched.TaskInfo, n)
	for i := range infos {
		var sp *sched.TaskSpec
		if arr != nil {
			sp = &arr.Spec
		} else {
			sp = &specs[i]
		}
		infos[i] = sched.TaskInfo{EstimateSeconds: sp.EstimateSeconds, NoSpeculation: sp.NoSpeculation, DeadlineSeconds: sp.DeadlineSeconds,
			Cpus: sp.Cpus, MemoryMB: sp.MemoryMB, GPUs: sp.GPUs}
	}
	return infos
}

// disclosed tells the scheduler and the watchers of the tasks a disclose
// stored. Call within apiWrite.
func (s *Server) disclosed(ctx context.Context, hd discloseHeader, owner string, res store.DiscloseResult, infos []sched.TaskInfo) {
	idx := make([]int32, len(infos))
	for i := range infos {
		idx[i] = res.FirstIndex + int32(i)
		infos[i].Index = idx[i]
	}
	at := seconds(res.DisclosedAt)
	// The set's cap as stored, not only this call's: an append to a set
	// the scheduler forgot (every task had ended) makes it anew.
	ev := sched.Event{Kind: sched.EventDisclosed, Time: at, Set: res.Set.ID, Owner: owner, Tasks: infos, MaxRunning: res.Set.MaxRunning, Route: res.Set.Route}
	if res.Created {
		ev.After = hd.after
	}
	s.apply(ev)
	if hd.request {
		s.apply(sched.Event{Kind: sched.EventRequested, Time: at, Set: res.Set.ID, Indexes: idx})
		s.requestHeard(res.Set.ID, res.RequestedAt)
	}
	if len(ev.After) > 0 {
		// What it waits for may have ended already.
		s.resolveDeps(ctx, res.DisclosedAt, []sched.SetID{res.Set.ID})
	}
	s.watch.publishRange(res.Set.ID, res.FirstIndex, res.Count)
}

// checkLoad applies the per-user caps on open sets and queued tasks before
// a disclose of n tasks (a new set when newSet). Call within apiWrite, so
// that two calls cannot both pass a cap. Errors: ERESOURCEEXHAUSTED naming the
// cap.
func (s *Server) checkLoad(ctx context.Context, owner string, newSet bool, n int) error {
	if s.cfg.MaxOpenSets < 0 && s.cfg.MaxQueuedTasks < 0 {
		return nil
	}
	l, err := s.db.GetUserLoad(ctx, owner)
	if err != nil {
		return err
	}
	if newSet && s.cfg.MaxOpenSets >= 0 && l.OpenSets >= s.cfg.MaxOpenSets {
		return sched.Errorf(sched.ERESOURCEEXHAUSTED, "open task sets cap reached: %q holds %d open sets (cap %d); cancel or finish some first",
			owner, l.OpenSets, s.cfg.MaxOpenSets)
	}
	if s.cfg.MaxQueuedTasks >= 0 && l.QueuedTasks+n > s.cfg.MaxQueuedTasks {
		return sched.Errorf(sched.ERESOURCEEXHAUSTED, "queued tasks cap reached: %q holds %d unfinished tasks and discloses %d more (cap %d)",
			owner, l.QueuedTasks, n, s.cfg.MaxQueuedTasks)
	}
	return nil
}

// Request marks tasks requested; executed ones finish and are billed at once.
func (h taskSetHandler) Request(ctx context.Context, req *batchv1.RequestRequest) (*batchv1.RequestResponse, error) {
	s := h.s
	if err := s.stopping(); err != nil {
		return nil, err
	}
	if len(req.Indexes) > store.MaxIndexesPerCall {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(req.Indexes), store.MaxIndexesPerCall)
	}
	if err := sched.CheckNamedOrAll(len(req.Indexes), req.All); err != nil {
		return nil, err
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	var res store.RequestResult
	s.apiWriteWork(indexesWork(req.Indexes, req.All), func() {
		res, err = s.db.Request(ctx, store.RequestInput{Owner: owner, SetID: sched.SetID(req.SetId), Indexes: req.Indexes, All: req.All})
		if err != nil {
			return
		}
		at := seconds(res.RequestedAt)
		if req.All {
			if res.NumRequested > 0 || len(res.FinishedAtOnce) > 0 {
				s.apply(sched.Event{Kind: sched.EventRequested, Time: at, Set: sched.SetID(req.SetId)})
				s.requestHeard(sched.SetID(req.SetId), res.RequestedAt)
			}
		} else {
			idx := append([]int32{}, res.Requested...)
			for _, t := range res.FinishedAtOnce {
				idx = append(idx, t.Index)
			}
			if len(idx) > 0 {
				s.apply(sched.Event{Kind: sched.EventRequested, Time: at, Set: sched.SetID(req.SetId), Indexes: idx})
				s.requestHeard(sched.SetID(req.SetId), res.RequestedAt)
			}
		}
		for _, t := range res.FinishedAtOnce {
			s.metrics.observeFinished(t)
		}
		if len(res.FinishedAtOnce) > 0 {
			s.resolveDeps(ctx, res.RequestedAt, []sched.SetID{sched.SetID(req.SetId)})
		}
		for _, b := range res.Bills {
			// Request bills only tasks that had executed while disclosed.
			s.metrics.addBilledExecuted(b.SlotSeconds)
		}
		if req.All {
			s.watch.publish(sched.SetID(req.SetId), nil)
		} else {
			s.watch.publish(sched.SetID(req.SetId), req.Indexes)
		}
	})
	if err != nil {
		return nil, err
	}
	return &batchv1.RequestResponse{TaskSet: setToProto(res.Set), Requested: res.NumRequested,
		FinishedAtOnce: int32(len(res.FinishedAtOnce)), Unchanged: res.Unchanged, Tasks: tasksToProto(res.Tasks)}, nil
}

// Cancel cancels every unfinished task of the set (all: one UPDATE and one
// scheduler event for the unrequested ones, one event for the requested)
// or the named ones, stopping and billing requested ones that ran.
func (h taskSetHandler) Cancel(ctx context.Context, req *batchv1.CancelRequest) (*batchv1.CancelResponse, error) {
	s := h.s
	if len(req.Indexes) > store.MaxIndexesPerCall {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(req.Indexes), store.MaxIndexesPerCall)
	}
	if err := sched.CheckNamedOrAll(len(req.Indexes), req.All); err != nil {
		return nil, err
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	var res store.CancelResult
	s.apiWriteWork(indexesWork(req.Indexes, req.All), func() {
		res, err = s.db.Cancel(ctx, store.CancelInput{Owner: owner, SetID: sched.SetID(req.SetId), Indexes: req.Indexes, All: req.All})
		if err != nil {
			return
		}
		now := s.now()
		if req.All {
			if res.Canceled > 0 || res.Stopped > 0 {
				s.apply(sched.Event{Kind: sched.EventCanceled, Time: seconds(now), Set: sched.SetID(req.SetId)})
			}
			if len(res.Requested) > 0 {
				s.apply(sched.Event{Kind: sched.EventCanceled, Time: seconds(now), Set: sched.SetID(req.SetId), Indexes: res.Requested})
			}
		} else if len(res.Indexes) > 0 {
			s.apply(sched.Event{Kind: sched.EventCanceled, Time: seconds(now), Set: sched.SetID(req.SetId), Indexes: res.Indexes})
		}
		var self sched.SetID
		if n := res.Set.Counts; res.Set.Waiting && n.Disclosed+n.Requested == 0 {
			self = sched.SetID(req.SetId) // nothing of it is left to wait
		}
		s.resolveDepsOf(ctx, now, []sched.SetID{sched.SetID(req.SetId)}, self)
		for _, b := range res.Bills {
			s.metrics.addBilled(b.SlotSeconds)
		}
		if req.All {
			s.watch.publish(sched.SetID(req.SetId), nil)
		} else {
			s.watch.publish(sched.SetID(req.SetId), res.Indexes)
		}
	})
	if err != nil {
		return nil, err
	}
	return &batchv1.CancelResponse{TaskSet: setToProto(res.Set), Canceled: res.Canceled, Stopped: res.Stopped,
		AlreadyCanceled: res.AlreadyCanceled, Unchanged: res.Unchanged}, nil
}

// GetTaskSet returns the set and a page of its tasks.
func (h taskSetHandler) GetTaskSet(ctx context.Context, req *batchv1.GetTaskSetRequest) (*batchv1.GetTaskSetResponse, error) {
	s := h.s
	if err := errors.Join(checkSetID("set_id", req.SetId), checkPageSize(req.PageSize)); err != nil {
		return nil, err
	}
	var states []sched.TaskState
	for _, p := range req.States {
		st, ok := taskStateFromProto(p)
		if !ok {
			return nil, sched.Errorf(sched.EINVALID, "unknown task state %v", p)
		}
		states = append(states, st)
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	set, tasks, next, err := s.db.ListTasks(ctx, owner, sched.SetID(req.SetId),
		store.TaskPage{PageSize: req.PageSize, PageToken: req.PageToken, States: states})
	if err != nil {
		return nil, err
	}
	return &batchv1.GetTaskSetResponse{TaskSet: setToProto(set), Tasks: tasksToProto(tasks), NextPageToken: next}, nil
}

// ListTaskSets returns a page of the caller's sets (an admin's: any
// user's, or everyone's), newest first, filtered as asked.
func (h taskSetHandler) ListTaskSets(ctx context.Context, req *batchv1.ListTaskSetsRequest) (*batchv1.ListTaskSetsResponse, error) {
	s := h.s
	if err := checkPageSize(req.PageSize); err != nil {
		return nil, err
	}
	f := store.SetFilter{Owner: callerFrom(ctx), NameGlob: req.NameGlob, PageSize: req.PageSize, PageToken: req.PageToken, IncludeOpen: req.IncludeOpen}
	switch {
	case req.AllOwners && req.Owner != "":
		return nil, sched.Errorf(sched.EINVALID, "give all_owners or owner, not both")
	case req.AllOwners || (req.Owner != "" && req.Owner != f.Owner):
		if !isAdmin(ctx) {
			return nil, sched.Errorf(sched.EPERMISSION, "listing other users' sets needs an admin token")
		}
		f.Owner = req.Owner
		if req.AllOwners {
			f.Owner = store.AllOwners
		}
	}
	var err error
	if f.States, err = setStatesFromProto(req.States); err != nil {
		return nil, err
	}
	if f.Labels, err = labelsFromProto(req.Labels); err != nil {
		return nil, err
	}
	if req.Since != nil {
		f.Since = req.Since.AsTime()
	}
	if req.Until != nil {
		f.Until = req.Until.AsTime()
	}
	sets, next, err := s.db.ListSets(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &batchv1.ListTaskSetsResponse{NextPageToken: next}
	for _, set := range sets {
		out.TaskSets = append(out.TaskSets, setToProto(set))
	}
	return out, nil
}

// GetOutput returns a requested task's output (FailedPrecondition for
// the others, saying why).
func (h taskSetHandler) GetOutput(ctx context.Context, req *batchv1.GetOutputRequest) (*batchv1.GetOutputResponse, error) {
	s := h.s
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndex("index", req.Index), checkOutputRange(req.Offset, req.Limit)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	out, err := s.db.GetAttemptOutput(ctx, owner, sched.TaskRef{Set: sched.SetID(req.SetId), Index: req.Index}, req.Attempt, req.Offset, req.Limit)
	if err != nil {
		return nil, err
	}
	return &batchv1.GetOutputResponse{Stdout: out.Stdout, Stderr: out.Stderr, StdoutSize: out.StdoutSize, StderrSize: out.StderrSize,
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated, ExitCode: out.ExitCode, TimedOut: out.TimedOut,
		CpuSeconds: out.CPUSeconds, SlotSeconds: out.SlotSeconds, CopyId: int64(out.Copy), Worker: string(out.Worker),
		State: taskStateToProto[out.State], Attempt: out.Attempt, Files: keptToProto(out.Files)}, nil
}

// watchChunk is the most tasks one WatchTaskSet message carries.
const watchChunk = 5000

// watchInterval is the shortest time between two messages to one watcher:
// changes in between are merged into one message.
const watchInterval = 100 * time.Millisecond

// DefaultWatchKeepalive is how long a watch stays silent before the server
// sends a keepalive (Config.WatchKeepalive); clients give up on a stream
// silent for three times as long (client.Config.WatchIdle).
const DefaultWatchKeepalive = 15 * time.Second

// maxWatchIndexes is the most tasks one watch may name.
const maxWatchIndexes = 1_000_000

// WatchTaskSet sends the set and its watched tasks (snapshot = true on the
// first message; a set larger than watchChunk continues in messages with
// snapshot = false), then the watched tasks that changed whenever one
// changes, merged at most every watchInterval, until the client leaves or
// the server stops. After Config.WatchKeepalive without a change it sends
// the set's summary with no tasks (a keepalive). A summary-only watch
// reads the set's summary alone for each message, never a task.
func (h taskSetHandler) WatchTaskSet(ctx context.Context, req *batchv1.WatchTaskSetRequest, stream *connect.ServerStream[batchv1.WatchTaskSetResponse]) error {
	s := h.s
	if len(req.Indexes) > maxWatchIndexes {
		return sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one watch; the limit is %d", len(req.Indexes), maxWatchIndexes)
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return err
	}
	id := sched.SetID(req.SetId)
	owner, err := s.ownerFor(ctx, id)
	if err != nil {
		return err
	}
	f := watchFilter{summary: req.SummaryOnly}
	if len(req.Indexes) > 0 {
		f.only = make(map[int32]struct{}, len(req.Indexes))
		for _, i := range req.Indexes {
			f.only[i] = struct{}{}
		}
	}
	named := f.indexes() // sorted, nil for every task
	// send sends what changed: every watched task (all), or the tasks idx.
	send := func(all bool, idx []int32, snapshot bool) error {
		switch {
		case f.summary:
			return h.sendSummary(ctx, stream, owner, id, snapshot)
		case all && named != nil:
			return h.sendSome(ctx, stream, owner, id, named, snapshot)
		case all:
			return h.sendAll(ctx, stream, owner, id, snapshot)
		}
		return h.sendSome(ctx, stream, owner, id, idx, snapshot)
	}
	// Subscribed before the snapshot is read, so that no change falls
	// between them; the snapshot's read says NotFound for a set that is
	// not the caller's.
	sub := s.watch.subscribeFilter(id, f)
	defer s.watch.unsubscribe(sub)
	if err := send(true, nil, true); err != nil {
		return err
	}
	var (
		keep      *time.Ticker
		keepalive <-chan time.Time // nil: never
	)
	if d := s.cfg.WatchKeepalive; d > 0 {
		keep = time.NewTicker(d)
		defer keep.Stop()
		keepalive = keep.C
	}
	for {
		quiet := false
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-sub.notify:
		case <-keepalive:
			quiet = true
		}
		if err := s.stillValid(ctx); err != nil {
			return err
		}
		var err error
		if quiet {
			err = h.sendSummary(ctx, stream, owner, id, false)
		} else {
			all, idx := sub.take()
			err = send(all, idx, false)
		}
		if err != nil {
			return err
		}
		if keep != nil {
			keep.Reset(s.cfg.WatchKeepalive) // silent since this send
		}
		t := time.NewTimer(watchInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (h taskSetHandler) sendAll(ctx context.Context, stream *connect.ServerStream[batchv1.WatchTaskSetResponse], owner string, id sched.SetID, snapshot bool) error {
	token := ""
	for first := true; first || token != ""; first = false {
		set, tasks, next, err := h.s.db.ListTasks(ctx, owner, id, store.TaskPage{PageSize: watchChunk, PageToken: token})
		if err != nil {
			return err
		}
		if err := stream.Send(&batchv1.WatchTaskSetResponse{TaskSet: setToProto(set), Tasks: tasksToProto(tasks), Snapshot: snapshot && first}); err != nil {
			return err
		}
		h.s.watch.sentTasks(len(tasks))
		token = next
	}
	return nil
}

// sendSome sends the tasks idx (in order; those the set lacks are
// skipped), watchChunk a message; the first says snapshot if asked.
func (h taskSetHandler) sendSome(ctx context.Context, stream *connect.ServerStream[batchv1.WatchTaskSetResponse], owner string, id sched.SetID, idx []int32, snapshot bool) error {
	for start := 0; start == 0 || start < len(idx); start += watchChunk {
		set, tasks, err := h.s.db.GetTasks(ctx, owner, id, idx[start:min(len(idx), start+watchChunk)])
		if err != nil {
			return err
		}
		if err := stream.Send(&batchv1.WatchTaskSetResponse{TaskSet: setToProto(set), Tasks: tasksToProto(tasks), Snapshot: snapshot && start == 0}); err != nil {
			return err
		}
		h.s.watch.sentTasks(len(tasks))
	}
	return nil
}

// sendSummary sends the set's summary and no tasks: one read of the set.
func (h taskSetHandler) sendSummary(ctx context.Context, stream *connect.ServerStream[batchv1.WatchTaskSetResponse], owner string, id sched.SetID, snapshot bool) error {
	set, err := h.s.db.GetTaskSet(ctx, owner, id)
	if err != nil {
		return err
	}
	return stream.Send(&batchv1.WatchTaskSetResponse{TaskSet: setToProto(set), Snapshot: snapshot})
}

// Retry runs failed, timed-out or canceled tasks again in place (same set,
// same index, the next attempt), each in the class it had.
func (h taskSetHandler) Retry(ctx context.Context, req *batchv1.RetryRequest) (*batchv1.RetryResponse, error) {
	s := h.s
	if err := s.stopping(); err != nil {
		return nil, err
	}
	if len(req.Indexes) > store.MaxIndexesPerCall {
		return nil, sched.Errorf(sched.ERESOURCEEXHAUSTED, "%d indexes in one call; the limit is %d", len(req.Indexes), store.MaxIndexesPerCall)
	}
	if err := sched.CheckNamedOrAll(len(req.Indexes), req.All); err != nil {
		return nil, err
	}
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndexes(req.Indexes)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	var res store.RetryResult
	s.apiWriteWork(indexesWork(req.Indexes, req.All), func() {
		res, err = s.db.Retry(ctx, store.RetryInput{Owner: owner, SetID: sched.SetID(req.SetId), Indexes: req.Indexes, All: req.All})
		if err != nil || len(res.Retried) == 0 {
			return
		}
		s.apply(sched.Event{Kind: sched.EventRetried, Time: seconds(res.At), Set: sched.SetID(req.SetId), Owner: owner, Tasks: res.Retried,
			Route: s.retriedRoute(ctx, sched.SetID(req.SetId))})
		s.metrics.retried(sched.RetriedByUser, len(res.Retried))
		idx := make([]int32, len(res.Retried))
		for i, t := range res.Retried {
			idx[i] = t.Index
		}
		s.watch.publish(sched.SetID(req.SetId), idx)
	})
	if err != nil {
		return nil, err
	}
	out := &batchv1.RetryResponse{TaskSet: setToProto(res.Set), Unchanged: res.Unchanged, Tasks: tasksToProto(res.Tasks)}
	for _, t := range res.Retried {
		out.Retried = append(out.Retried, t.Index)
	}
	return out, nil
}

// GetTask returns one task in detail: its current attempt, its earlier
// attempts, and every copy of each.
func (h taskSetHandler) GetTask(ctx context.Context, req *batchv1.GetTaskRequest) (*batchv1.GetTaskResponse, error) {
	s := h.s
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndex("index", req.Index)); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	ref := sched.TaskRef{Set: sched.SetID(req.SetId), Index: req.Index}
	set, t, sus, err := s.db.TaskDetail(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	pt := taskToProto(t)
	addSuspensions(pt, sus)
	return &batchv1.GetTaskResponse{TaskSet: setToProto(set), Task: pt}, nil
}

// indexesWork is the API lane's measure (apiWriteWork) of a call naming
// indexes of a set, or all of it: a whole set may be big, so it takes a
// batch of its own.
func indexesWork(indexes []int32, all bool) int {
	if all {
		return maxAPIBatchWork
	}
	return len(indexes)
}
