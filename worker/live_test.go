package worker

import (
	"bytes"
	"context"
	"testing"

	batchv1 "batchd/proto/batch/v1"
)

// fakeLive is what the fake server holds of pushed output: each copy's
// streams as received, and whether it answers stop. Guarded by
// fakeServer.mu.
type fakeLive struct {
	out    map[int64]*[2][]byte
	pushes int
	stop   bool
}

// ReportOutput appends what continues each stream and answers the sizes
// held, as the server does.
func (f *fakeServer) ReportOutput(_ context.Context, req *batchv1.ReportOutputRequest) (*batchv1.ReportOutputResponse, error) {
	f.mu.Lock()
	if f.live.out == nil {
		f.live.out = map[int64]*[2][]byte{}
	}
	o := f.live.out[req.CopyId]
	if o == nil {
		o = &[2][]byte{}
		f.live.out[req.CopyId] = o
	}
	for i, p := range [2]struct {
		off  int64
		data []byte
	}{{req.StdoutOffset, req.Stdout}, {req.StderrOffset, req.Stderr}} {
		if have := int64(len(o[i])); p.off <= have && p.off+int64(len(p.data)) > have {
			o[i] = append(o[i], p.data[have-p.off:]...)
		}
	}
	f.live.pushes++
	resp := &batchv1.ReportOutputResponse{Stop: f.live.stop, StdoutSize: int64(len(o[0])), StderrSize: int64(len(o[1]))}
	f.mu.Unlock()
	f.bump()
	return resp, nil
}

// liveOut returns what the fake holds of copy id's stream i.
func (f *fakeServer) liveOut(id int64, i int) []byte {
	if o := f.live.out[id]; o != nil {
		return o[i]
	}
	return nil
}

// A copy followed from its start pushes each line while it runs, before
// its report; a copy nobody follows pushes nothing.
func TestFollowPushesLinesWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The copy waits for the test's go-ahead (a file) between two lines.
	gate := t.TempDir() + "/go"
	spec := &batchv1.TaskSpec{Argv: []string{"sh", "-c", `echo one; echo err >&2; while [ ! -e "$1" ]; do sleep 0.01; done; echo two`, "sh", gate}}
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Start{Start: &batchv1.StartCopy{
		CopyId: 1, Slot: 0, SetId: 7, Index: 1, Spec: spec, FollowOutput: true}}})
	b.srv.startCopy(2, 1, &batchv1.TaskSpec{Argv: []string{"sh", "-c", "echo quiet"}})
	b.srv.waitFor("the first line pushed", func() bool {
		return bytes.Equal(b.srv.liveOut(1, 0), []byte("one\n")) && bytes.Equal(b.srv.liveOut(1, 1), []byte("err\n"))
	})
	if n := b.srv.reportCount(1); n != 0 {
		t.Fatalf("copy 1 reported %d times before its end", n)
	}
	touch(t, gate)
	r := b.srv.report(1)
	if got, want := string(r.Stdout), "one\ntwo\n"; got != want {
		t.Fatalf("report stdout = %q, want %q", got, want)
	}
	b.srv.report(2)
	b.srv.waitFor("the rest pushed", func() bool { return string(b.srv.liveOut(1, 0)) == "one\ntwo\n" })
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	if out := b.srv.live.out[2]; out != nil {
		t.Fatalf("copy 2, not followed, pushed %q", out)
	}
}

// A follow order for a running copy pushes what it wrote so far; an
// unfollow order stops the pushes.
func TestFollowOrderMidRunAndUnfollow(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	gate := t.TempDir() + "/go"
	gate2 := t.TempDir() + "/go2"
	b.srv.startCopy(1, 0, &batchv1.TaskSpec{Argv: []string{"sh", "-c",
		`echo one; while [ ! -e "$1" ]; do sleep 0.01; done; echo two; while [ ! -e "$2" ]; do sleep 0.01; done; echo three`, "sh", gate, gate2}})
	b.srv.waitFor("copy running", func() bool { return len(b.srv.heartbeats) > 0 })
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_FollowOutput{FollowOutput: 1}})
	b.srv.waitFor("output so far pushed", func() bool { return string(b.srv.liveOut(1, 0)) == "one\n" })
	touch(t, gate)
	b.srv.waitFor("second line pushed", func() bool { return string(b.srv.liveOut(1, 0)) == "one\ntwo\n" })
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_UnfollowOutput{UnfollowOutput: 1}})
	// Orders are carried out in turn: once copy 2, started after the
	// unfollow, has reported, the unfollow was carried out.
	b.srv.startCopy(2, 1, &batchv1.TaskSpec{Argv: []string{"true"}})
	b.srv.report(2)
	touch(t, gate2)
	r := b.srv.report(1)
	if got, want := string(r.Stdout), "one\ntwo\nthree\n"; got != want {
		t.Fatalf("report stdout = %q, want %q", got, want)
	}
	b.srv.mu.Lock()
	defer b.srv.mu.Unlock()
	if got := string(b.srv.liveOut(1, 0)); got != "one\ntwo\n" {
		t.Fatalf("pushed after unfollow: %q", got)
	}
}
