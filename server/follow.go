// FollowOutput: a requested task's output while it runs, from the copy the
// scheduler expects to win, then its stored output once it ends.

package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// followChunk is the most bytes of each stream one FollowOutput message
// carries (less than one GetOutput read, store.DefaultOutputRead).
const followChunk = 256 << 10

// follower is one FollowOutput stream.
type follower struct {
	s      *Server
	ctx    context.Context
	stream *connect.ServerStream[batchv1.FollowOutputResponse]
	ref    sched.TaskRef
	owner  string
	copy   sched.CopyID // the copy followed (0: none yet)
	off    [2]int64     // what the client has of each of copy's streams
	buf    *liveBuf     // copy's live buffer while it runs
	// switched: the next message starts another copy's output (marker why).
	switched bool
	marker   string
}

// FollowOutput streams a requested task's output while it runs and ends
// with the task (see the RPC's comment). A slow client never holds up the
// worker or the server: the copy's buffer keeps growing, and this stream
// reads it from the client's offsets whenever it can send.
func (h taskSetHandler) FollowOutput(ctx context.Context, req *batchv1.FollowOutputRequest, stream *connect.ServerStream[batchv1.FollowOutputResponse]) error {
	s := h.s
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndex("index", req.Index),
		checkOutputRange(req.StdoutOffset, 0), checkOutputRange(req.StderrOffset, 0)); err != nil {
		return err
	}
	if req.CopyId < 0 {
		return sched.Errorf(sched.EINVALID, "copy_id = %d: copies are numbered from 1", req.CopyId)
	}
	ref := sched.TaskRef{Set: sched.SetID(req.SetId), Index: req.Index}
	owner, err := s.ownerFor(ctx, ref.Set)
	if err != nil {
		return err
	}
	// Subscribed before the first look, so that no change falls between.
	sub := s.watch.subscribe(ref.Set)
	defer s.watch.unsubscribe(sub)
	s.live.wait(ref)
	defer s.live.unwait(ref)
	f := &follower{s: s, ctx: ctx, stream: stream, ref: ref, owner: owner, copy: sched.CopyID(req.CopyId),
		off: [2]int64{req.StdoutOffset, req.StderrOffset}}
	defer f.drop()
	// The headers now: the client's call returns once the stream is open.
	if err := stream.Send(nil); err != nil {
		return err
	}
	// A keepalive (a message with no bytes) after a quiet
	// Config.WatchKeepalive, as WatchTaskSet sends.
	var keepalive <-chan time.Time
	if d := s.cfg.WatchKeepalive; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		keepalive = t.C
	}
	recheck := true
	for {
		if recheck {
			recheck = false
			if done, err := f.look(); done || err != nil {
				return err
			}
		}
		changed, err := f.pump()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return sched.Errorf(sched.EUNAVAILABLE, "batchd is stopping: follow again once it is back")
		case <-sub.notify:
			all, idx := sub.take()
			recheck = all || containsIndex(idx, ref.Index)
		case <-keepalive:
			if err := f.send([2][]byte{}, nil); err != nil {
				return err
			}
		case <-changed:
			// New bytes, or the copy ended (its end is also published;
			// look again either way, so the stored output follows).
			recheck = f.buf == nil || f.bufEnded()
		}
	}
}

func containsIndex(idx []int32, i int32) bool {
	for _, x := range idx {
		if x == i {
			return true
		}
	}
	return false
}

// look reads the task's state and picks what to follow: its stored output
// once it has ended (then done), else the live copy expected to win.
func (f *follower) look() (done bool, err error) {
	s := f.s
	_, tasks, err := s.db.GetTasks(f.ctx, f.owner, f.ref.Set, []int32{f.ref.Index})
	if err != nil {
		return false, err
	}
	if len(tasks) == 0 {
		return false, sched.Errorf(sched.ENOTFOUND, "task %d of set %d not found", f.ref.Index, f.ref.Set)
	}
	switch st := tasks[0].State; {
	case st == sched.TaskDisclosed:
		return false, sched.Errorf(sched.EFAILEDPRECONDITION, "task %d is disclosed: request it to follow its output", f.ref.Index)
	case st == sched.TaskExecuted:
		return false, sched.Errorf(sched.EFAILEDPRECONDITION, "task %d has executed but is not requested: request it to read its output", f.ref.Index)
	case st.Final():
		return true, f.stored(st)
	}
	// Requested: which live copies does the scheduler hold, and which does
	// it expect to win? Asked in the API lane, as Why does.
	var (
		live  []sched.LiveCopy
		order bool
		nb    *liveBuf
	)
	s.apiWrite(func() {
		live = s.sched.LiveCopies(f.ref, seconds(s.now()))
		if f.copy != 0 && f.buf != nil && !f.bufEnded() {
			for _, lc := range live {
				if lc.Copy == f.copy {
					live = nil // still live: keep following it
					nb = f.buf
					return
				}
			}
		}
		if len(live) > 0 {
			nb, order = s.live.subscribe(f.ref, live[0])
			if order {
				if w := s.workers[live[0].Worker]; w != nil {
					w.push(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_FollowOutput{FollowOutput: int64(live[0].Copy)}})
				}
			}
		}
	})
	if nb == f.buf {
		return false, nil
	}
	f.drop()
	if nb == nil {
		return false, nil // no copy runs now: wait for one
	}
	f.buf = nb
	f.follow(nb.copy, "")
	return false, nil
}

// follow makes c the copy followed. The client's offsets are c's when it
// named no copy; a change of copy is announced in the next message and
// starts from offset 0.
func (f *follower) follow(c sched.CopyID, why string) {
	if c == f.copy {
		return
	}
	if f.copy == 0 {
		f.copy = c
		return
	}
	if why == "" {
		why = fmt.Sprintf("copy %d is no longer running; following copy %d, the one expected to win, from its start", f.copy, c)
	}
	f.switched, f.marker = true, why
	f.copy, f.off = c, [2]int64{}
}

// bufEnded says whether the buffer followed has ended.
func (f *follower) bufEnded() bool {
	f.buf.mu.Lock()
	defer f.buf.mu.Unlock()
	return f.buf.ended
}

// drop lets go of the live buffer followed, and tells its worker to stop
// pushing when nobody else follows it.
func (f *follower) drop() {
	b := f.buf
	if b == nil {
		return
	}
	f.buf = nil
	// Under mu, as a follower's subscribe and its follow order are: an
	// unfollow never overtakes the follow order of a follower that took
	// the copy up meanwhile.
	s := f.s
	s.lockWorker()
	defer s.mu.Unlock()
	if !s.live.unsubscribe(b) {
		return
	}
	if w := s.workers[b.worker]; w != nil {
		w.push(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_UnfollowOutput{UnfollowOutput: int64(b.copy)}})
	}
}

// pump sends what the followed buffer holds past the client's offsets and
// returns the channel closed at its next change (nil when nothing is
// followed).
func (f *follower) pump() (<-chan struct{}, error) {
	if f.buf == nil {
		return nil, nil
	}
	for {
		out, _, changed := f.buf.read(f.off, followChunk)
		if len(out[0]) == 0 && len(out[1]) == 0 && !f.switched {
			return changed, nil
		}
		if err := f.send(out, nil); err != nil {
			return nil, err
		}
	}
}

// send sends one message of the followed copy's bytes (and the end, when
// end is set), and moves the offsets past them.
func (f *follower) send(out [2][]byte, end *batchv1.FollowOutputResponse) error {
	m := end
	if m == nil {
		m = &batchv1.FollowOutputResponse{}
	}
	m.CopyId = int64(f.copy)
	m.Stdout, m.StdoutOffset = out[0], f.off[0]
	m.Stderr, m.StderrOffset = out[1], f.off[1]
	if f.switched {
		m.Switched, m.Marker = true, f.marker
		f.switched, f.marker = false, ""
	}
	if err := f.stream.Send(m); err != nil {
		return err
	}
	f.off[0] += int64(len(out[0]))
	f.off[1] += int64(len(out[1]))
	return nil
}

// stored sends the ended task's stored output from the client's offsets
// (from the start, with a marker, when another copy than the one followed
// won) and the end.
func (f *follower) stored(st sched.TaskState) error {
	f.drop()
	end := &batchv1.FollowOutputResponse{Ended: true, State: taskStateToProto[st]}
	for {
		o, err := f.s.db.GetOutput(f.ctx, f.owner, f.ref, f.off[0], followChunk)
		if sched.ErrorCode(err) == sched.EFAILEDPRECONDITION {
			// Canceled before it had a result: no output, just the end.
			return f.send([2][]byte{}, end)
		}
		if err != nil {
			return err
		}
		if o.Copy != f.copy {
			f.follow(o.Copy, fmt.Sprintf("copy %d won; its output from the start", o.Copy))
			continue
		}
		// GetOutput reads both streams from one offset: stderr from its
		// own when the two differ.
		errOut := o.Stderr
		if f.off[1] != f.off[0] {
			e, err := f.s.db.GetOutput(f.ctx, f.owner, f.ref, f.off[1], followChunk)
			if err != nil {
				return err
			}
			if e.Copy != o.Copy {
				continue // retried between the reads
			}
			errOut = e.Stderr
		}
		chunk := [2][]byte{o.Stdout, errOut}
		last := f.off[0]+int64(len(o.Stdout)) >= o.StdoutSize && f.off[1]+int64(len(errOut)) >= o.StderrSize
		if !last {
			if err := f.send(chunk, nil); err != nil {
				return err
			}
			continue
		}
		end.ExitCode, end.TimedOut = o.ExitCode, o.TimedOut
		end.StdoutTruncated, end.StderrTruncated = o.StdoutTruncated, o.StderrTruncated
		return f.send(chunk, end)
	}
}
