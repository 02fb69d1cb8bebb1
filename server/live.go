// Live output: the in-memory buffers of copies somebody follows, filled by
// their workers' ReportOutput pushes and read by FollowOutput streams
// (follow.go). Only followed copies are pushed: the server asks a worker
// with StartCopy.follow_output (a copy started while a follower waits for
// its task) or a follow_output order, and stops it with unfollow_output
// or ReportOutput's stop.

package server

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// liveHub holds the followed copies' buffers and the tasks whose followers
// wait for a copy.
type liveHub struct {
	cap int64 // bytes kept per stream (Config.OutputCap), as the stored output

	mu      sync.Mutex
	waiting map[sched.TaskRef]int // followers waiting on each task
	copies  map[sched.CopyID]*liveBuf
	// active is len(waiting)+len(copies): the dispatch path reads it
	// without mu and pays nothing while nobody follows anything.
	active atomic.Int64
}

func newLiveHub(cap int64) *liveHub {
	return &liveHub{cap: cap, waiting: map[sched.TaskRef]int{}, copies: map[sched.CopyID]*liveBuf{}}
}

// liveBuf is one followed copy's output as its worker pushed it: the
// first cap bytes of each stream, as the stored output keeps them.
type liveBuf struct {
	copy   sched.CopyID
	task   sched.TaskRef
	worker sched.WorkerID
	subs   int // followers reading it; guarded by liveHub.mu

	mu      sync.Mutex
	out     [2][]byte // stdout, stderr
	cut     [2]bool   // the worker cut the stream at the cap
	ended   bool      // the copy ended (or is no longer followed)
	changed chan struct{}
}

func (h *liveHub) count() { h.active.Store(int64(len(h.waiting) + len(h.copies))) }

// wait notes a follower waiting for a copy of ref; unwait undoes it.
func (h *liveHub) wait(ref sched.TaskRef) {
	h.mu.Lock()
	h.waiting[ref]++
	h.count()
	h.mu.Unlock()
}

// unwait undoes wait. Once nobody follows ref, the buffers opened for
// its copies at their start that no follower took are dropped (their
// workers hear stop at their next push).
func (h *liveHub) unwait(ref sched.TaskRef) {
	h.mu.Lock()
	var drop []*liveBuf
	if h.waiting[ref]--; h.waiting[ref] <= 0 {
		delete(h.waiting, ref)
		for id, b := range h.copies {
			if b.task == ref && b.subs == 0 {
				delete(h.copies, id)
				drop = append(drop, b)
			}
		}
	}
	h.count()
	h.mu.Unlock()
	for _, b := range drop {
		b.end()
	}
}

// startFollowed says whether a copy of ref starting now should push its
// output from its start (a follower waits for the task), and if so opens
// its buffer. Called on the dispatch path for every start: free while
// nobody follows.
func (h *liveHub) startFollowed(ref sched.TaskRef, copy sched.CopyID, worker sched.WorkerID) bool {
	if h.active.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting[ref] == 0 {
		return false
	}
	if h.copies[copy] == nil {
		h.copies[copy] = &liveBuf{copy: copy, task: ref, worker: worker, changed: make(chan struct{})}
		h.count()
	}
	return true
}

// subscribe returns the buffer of lc, a copy of ref, for one more
// follower, and whether its worker must be told to push (the buffer is
// new).
func (h *liveHub) subscribe(ref sched.TaskRef, lc sched.LiveCopy) (b *liveBuf, order bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b = h.copies[lc.Copy]
	if b == nil {
		b = &liveBuf{copy: lc.Copy, task: ref, worker: lc.Worker, changed: make(chan struct{})}
		h.copies[lc.Copy] = b
		h.count()
		order = true
	}
	b.subs++
	return b, order
}

// unsubscribe lets go of b for one follower, and says whether b's worker
// should stop pushing (nobody follows it any more, and its copy runs).
func (h *liveHub) unsubscribe(b *liveBuf) (stop bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b.subs--; b.subs > 0 {
		return false
	}
	if h.copies[b.copy] == b {
		delete(h.copies, b.copy)
		h.count()
	}
	return b.end()
}

// ended drops copy's buffer once the copy has ended; its followers see it
// ended and read the rest from the stored output.
func (h *liveHub) ended(copy sched.CopyID) {
	if h.active.Load() == 0 {
		return
	}
	h.mu.Lock()
	b := h.copies[copy]
	if b != nil {
		delete(h.copies, copy)
		h.count()
	}
	h.mu.Unlock()
	if b != nil {
		b.end()
	}
}

// followOrders are the follow_output orders for worker's followed copies,
// sorted: a new Assignments stream restates them (the worker may have lost
// them with a broken stream, or restarted).
func (h *liveHub) followOrders(worker sched.WorkerID) []*batchv1.AssignmentsResponse {
	if h.active.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []sched.CopyID
	for id, b := range h.copies {
		if b.worker == worker {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]*batchv1.AssignmentsResponse, len(ids))
	for i, id := range ids {
		out[i] = &batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_FollowOutput{FollowOutput: int64(id)}}
	}
	return out
}

// get returns copy's buffer, nil when nobody follows it.
func (h *liveHub) get(copy sched.CopyID) *liveBuf {
	if h.active.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.copies[copy]
}

// end marks b ended and wakes its readers; it says whether b was not
// ended before.
func (b *liveBuf) end() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	b.ended = true
	close(b.changed)
	b.changed = make(chan struct{})
	return true
}

// add appends what continues stream i from off (bytes b already holds are
// skipped, a gap is refused: the worker sends again from b's size) up to
// cap, and says whether b changed. Call with b.mu held.
func (b *liveBuf) add(i int, off int64, p []byte, cut bool, cap int64) (grew bool) {
	have := int64(len(b.out[i]))
	if off > have || off+int64(len(p)) <= have {
		if cut && !b.cut[i] && off+int64(len(p)) >= have {
			b.cut[i] = true
			return true
		}
		return false
	}
	p = p[have-off:]
	if room := cap - have; int64(len(p)) > room {
		p = p[:max(room, 0)]
	}
	b.out[i] = append(b.out[i], p...)
	newCut := cut && !b.cut[i]
	b.cut[i] = b.cut[i] || cut
	return len(p) > 0 || newCut
}

// read returns b's bytes of each stream from off, at most max each, whether
// b has ended, and the channel closed at b's next change.
func (b *liveBuf) read(off [2]int64, max int) (out [2][]byte, ended bool, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range out {
		if off[i] < int64(len(b.out[i])) {
			p := b.out[i][off[i]:]
			if len(p) > max {
				p = p[:max]
			}
			out[i] = append([]byte(nil), p...)
		}
	}
	return out, b.ended, b.changed
}

// ReportOutput takes a followed copy's output from its worker: it appends
// to the copy's buffer and wakes its followers. A copy nobody follows
// gets stop. It takes no server lock: pushes never wait for dispatch.
func (h workerHandler) ReportOutput(ctx context.Context, req *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error) {
	s := h.s
	if req.WorkerId == "" || req.CopyId <= 0 {
		return nil, sched.Errorf(sched.EINVALID, "worker_id and copy_id are required")
	}
	if req.StdoutOffset < 0 || req.StderrOffset < 0 {
		return nil, sched.Errorf(sched.EINVALID, "offsets must not be negative")
	}
	id := sched.WorkerID(req.WorkerId)
	if err := s.checkWorker(ctx, id); err != nil {
		return nil, err
	}
	b := s.live.get(sched.CopyID(req.CopyId))
	if b == nil || b.worker != id {
		// Nobody follows it, or it is not this worker's copy: drop it.
		return &batchv1.ReportOutputResponse{Stop: true}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	grew := b.add(0, req.StdoutOffset, req.Stdout, req.StdoutTruncated, s.live.cap)
	grew = b.add(1, req.StderrOffset, req.Stderr, req.StderrTruncated, s.live.cap) || grew
	if grew && !b.ended {
		close(b.changed)
		b.changed = make(chan struct{})
	}
	return &batchv1.ReportOutputResponse{Stop: b.ended, StdoutSize: int64(len(b.out[0])), StderrSize: int64(len(b.out[1]))}, nil
}
