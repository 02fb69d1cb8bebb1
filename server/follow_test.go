package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
)

// follow opens a FollowOutput stream and returns its messages as they
// come; the channel is closed at the stream's end, whose error goes to
// errc.
func follow(t *testing.T, c batchv1connect.TaskSetServiceClient, req *batchv1.FollowOutputRequest) (<-chan *batchv1.FollowOutputResponse, <-chan error) {
	t.Helper()
	cctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := c.FollowOutput(cctx, req)
	ch, errc := make(chan *batchv1.FollowOutputResponse, 100), make(chan error, 1)
	if err != nil {
		close(ch)
		errc <- err
		return ch, errc
	}
	go func() {
		defer close(ch)
		for st.Receive() {
			ch <- st.Msg()
		}
		errc <- st.Err()
	}()
	return ch, errc
}

// recv returns the next message with bytes, a switch or the end (skipping
// keepalives), failing after patience.
func recv(t *testing.T, ch <-chan *batchv1.FollowOutputResponse, errc <-chan error) *batchv1.FollowOutputResponse {
	t.Helper()
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("follow stream ended: %v", <-errc)
			}
			if len(m.Stdout) == 0 && len(m.Stderr) == 0 && !m.Switched && !m.Ended {
				continue
			}
			return m
		case <-time.After(patience):
			t.Fatalf("no follow message in %v", patience)
		}
	}
}

func (w *fakeWorker) pushOutput(copyID int64, stdoutOff int64, stdout string) *batchv1.ReportOutputResponse {
	w.t.Helper()
	res, err := w.b.workers.ReportOutput(ctx(w.t), &batchv1.ReportOutputRequest{WorkerId: w.name, CopyId: copyID,
		StdoutOffset: stdoutOff, Stdout: []byte(stdout)})
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

// A follower of a running task gets what its copy pushes while it runs;
// when the copy is lost and the task runs again, a marker and the new
// copy's output from its start; at the end, the stored output past what
// it has, and the end. A second follower resumes from a copy and offset.
func TestFollowOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	c1 := w.start() // disclosed work takes the idle slot
	if c1.FollowOutput {
		t.Fatalf("start of a copy nobody follows asks for its output: %v", c1)
	}
	t.Run("ErrDisclosed", func(t *testing.T) {
		_, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
		wantCode(t, <-errc, connect.CodeFailedPrecondition)
	})
	t.Run("ErrNotOwner", func(t *testing.T) {
		other := b.as(b.addUser(t, "mallory", "user"))
		_, errc := follow(t, other.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
		wantCode(t, <-errc, connect.CodeNotFound)
	})
	t.Run("ErrOffset", func(t *testing.T) {
		_, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id, StdoutOffset: -1})
		wantCode(t, <-errc, connect.CodeInvalidArgument)
	})
	if res := w.pushOutput(c1.CopyId, 0, "early\n"); !res.Stop {
		t.Fatalf("push of a copy nobody follows: %v, want stop", res)
	}
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, All: true}))

	ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
	if m := w.next(); m.GetFollowOutput() != c1.CopyId {
		t.Fatalf("worker got %v, want follow_output %d", m, c1.CopyId)
	}
	if res := w.pushOutput(c1.CopyId, 0, "one\n"); res.Stop || res.StdoutSize != 4 {
		t.Fatalf("push: %v", res)
	}
	m := recv(t, ch, errc)
	if m.CopyId != c1.CopyId || string(m.Stdout) != "one\n" || m.StdoutOffset != 0 || m.Switched || m.Ended {
		t.Fatalf("first message: %v", m)
	}
	// A push that repeats what the server holds adds only the rest.
	w.pushOutput(c1.CopyId, 0, "one\ntwo\n")
	if m := recv(t, ch, errc); string(m.Stdout) != "two\n" || m.StdoutOffset != 4 {
		t.Fatalf("second message: %v", m)
	}
	// The worker hands the copy back (lost): the task runs again, its new
	// copy pushing from its start since somebody follows the task.
	if res, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: c1.CopyId, Killed: true, ExitCode: -1}); err != nil ||
		res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("hand back: %v %v", res, err)
	}
	c2 := w.start()
	if !c2.FollowOutput {
		t.Fatalf("start of a followed task's copy: %v, want follow_output", c2)
	}
	m = recv(t, ch, errc)
	if !m.Switched || m.CopyId != c2.CopyId || m.Marker == "" || m.StdoutOffset != 0 {
		t.Fatalf("switch: %v", m)
	}
	if len(m.Stdout) == 0 {
		w.pushOutput(c2.CopyId, 0, "a\n")
		m = recv(t, ch, errc)
	} else {
		t.Fatalf("bytes before the copy pushed any: %v", m)
	}
	if string(m.Stdout) != "a\n" || m.StdoutOffset != 0 || m.CopyId != c2.CopyId {
		t.Fatalf("new copy's output: %v", m)
	}
	b.clock.Advance(2 * time.Second)
	w.won(c2.CopyId, "a\nb\n")
	m = recv(t, ch, errc)
	if !m.Ended || string(m.Stdout) != "b\n" || m.StdoutOffset != 2 || m.State != batchv1.TaskState_TASK_STATE_FINISHED || m.ExitCode != 0 {
		t.Fatalf("end: %v", m)
	}
	if _, ok := <-ch; ok {
		t.Fatal("a message after the end")
	}
	if err := <-errc; err != nil {
		t.Fatalf("stream error: %v", err)
	}

	t.Run("Resume", func(t *testing.T) {
		ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id, CopyId: c2.CopyId, StdoutOffset: 1})
		if m := recv(t, ch, errc); !m.Ended || m.Switched || string(m.Stdout) != "\nb\n" || m.StdoutOffset != 1 {
			t.Fatalf("resumed: %v", m)
		}
	})
	t.Run("ResumeOtherCopy", func(t *testing.T) {
		// Offsets of the lost copy: the winner's output from its start.
		ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id, CopyId: c1.CopyId, StdoutOffset: 8})
		if m := recv(t, ch, errc); !m.Ended || !m.Switched || m.CopyId != c2.CopyId || string(m.Stdout) != "a\nb\n" || m.StdoutOffset != 0 {
			t.Fatalf("resumed from another copy: %v", m)
		}
	})
	t.Run("Finished", func(t *testing.T) {
		ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
		if m := recv(t, ch, errc); !m.Ended || m.Switched || string(m.Stdout) != "a\nb\n" {
			t.Fatalf("finished: %v", m)
		}
	})
}

// A follower that leaves stops its copy's pushes: the worker gets an
// unfollow order, and a push after it is answered stop.
func TestFollowOutputLeave(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	c := w.start()
	cctx, cancel := context.WithCancel(ctx(t))
	st, err := b.tasks.FollowOutput(cctx, &batchv1.FollowOutputRequest{SetId: set.Id})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.next(); m.GetFollowOutput() != c.CopyId {
		t.Fatalf("worker got %v, want follow_output", m)
	}
	w.pushOutput(c.CopyId, 0, "x\n")
	for st.Receive() && len(st.Msg().Stdout) == 0 {
	}
	cancel()
	if m := w.next(); m.GetUnfollowOutput() != c.CopyId {
		t.Fatalf("worker got %v, want unfollow_output", m)
	}
	if res := w.pushOutput(c.CopyId, 2, "y\n"); !res.Stop {
		t.Fatalf("push after the follower left: %v, want stop", res)
	}
}

// A follower of a task's original copy, when a speculative copy wins,
// gets a marker and the winner's output from its start, then the end.
func TestFollowOutputSpeculativeWinner(t *testing.T) {
	t.Parallel()
	b := setup(t, options{sched: sched.Config{Speculation: sched.SpecBestEffortLATE}})
	w, _ := b.worker(t, "w", 2)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: estimated(1, 1), Request: true})).TaskSet
	orig := w.start()
	ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
	if m := w.next(); m.GetFollowOutput() != orig.CopyId {
		t.Fatalf("worker got %v, want follow_output %d", m, orig.CopyId)
	}
	w.pushOutput(orig.CopyId, 0, "original\n")
	if m := recv(t, ch, errc); m.CopyId != orig.CopyId || string(m.Stdout) != "original\n" {
		t.Fatalf("original's output: %v", m)
	}
	// The original runs far past its estimate: a speculative copy starts.
	var spec *batchv1.StartCopy
	for step := 0; spec == nil; step++ {
		if step == 100 {
			t.Fatalf("no speculative copy after %d steps", step)
		}
		b.clock.Advance(5 * time.Second)
		must[*batchv1.HeartbeatResponse](t)(b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w",
			Copies: []*batchv1.CopyProgress{{CopyId: orig.CopyId, Progress: -1}}}))
		b.srv.DispatchOnce()
		if running := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{})).Queues.RunningCopies; running == 2 {
			spec = w.start()
		}
	}
	if !spec.Speculative {
		t.Fatalf("second copy %v, want a speculative one", spec)
	}
	if _, err := w.finish(spec.CopyId, "speculative\n", 0, 1); err != nil {
		t.Fatal(err)
	}
	m := recv(t, ch, errc)
	if !m.Switched || m.CopyId != spec.CopyId || !strings.Contains(m.Marker, "won") || string(m.Stdout) != "speculative\n" || m.StdoutOffset != 0 {
		t.Fatalf("after the speculative copy won: %v", m)
	}
	if !m.Ended {
		if m = recv(t, ch, errc); !m.Ended {
			t.Fatalf("no end: %v", m)
		}
	}
}

// A followed task canceled while it runs ends the stream with its state.
func TestFollowOutputCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	c := w.start()
	ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
	if m := w.next(); m.GetFollowOutput() != c.CopyId {
		t.Fatalf("worker got %v, want follow_output", m)
	}
	w.pushOutput(c.CopyId, 0, "partial\n")
	if m := recv(t, ch, errc); string(m.Stdout) != "partial\n" {
		t.Fatalf("live output: %v", m)
	}
	must[*batchv1.CancelResponse](t)(b.tasks.Cancel(ctx(t), &batchv1.CancelRequest{SetId: set.Id, Indexes: []int32{0}}))
	m := recv(t, ch, errc)
	if !m.Ended || m.State != batchv1.TaskState_TASK_STATE_CANCELED {
		t.Fatalf("after the cancel: %v, want the end of a canceled task", m)
	}
	if err := <-errc; err != nil {
		t.Fatalf("stream error: %v", err)
	}
}

// A follow of a quiet task sends keepalives: messages without bytes at
// the follower's offsets.
func TestFollowOutputKeepalive(t *testing.T) {
	t.Parallel()
	b := setup(t, options{keepalive: 10 * time.Millisecond})
	w, _ := b.worker(t, "w", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	c := w.start()
	ch, errc := follow(t, b.tasks, &batchv1.FollowOutputRequest{SetId: set.Id})
	if m := w.next(); m.GetFollowOutput() != c.CopyId {
		t.Fatalf("worker got %v, want follow_output", m)
	}
	w.pushOutput(c.CopyId, 0, "x\n")
	recv(t, ch, errc)
	for m := range ch {
		if len(m.Stdout) == 0 && len(m.Stderr) == 0 && !m.Ended && !m.Switched {
			if m.CopyId != c.CopyId || m.StdoutOffset != 2 {
				t.Fatalf("keepalive %v, want copy %d at offset 2", m, c.CopyId)
			}
			return
		}
		t.Fatalf("unexpected message %v", m)
	}
	t.Fatalf("stream ended: %v", <-errc)
}
