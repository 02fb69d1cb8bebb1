package server_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// fakeWorker drives the worker protocol from a test with the generated
// client: it registers and collects what its Assignments stream sends.
type fakeWorker struct {
	t      *testing.T
	b      *bundle
	name   string
	got    chan *batchv1.AssignmentsResponse
	cancel context.CancelFunc
	// held and suspended mirror the agent's copies, so that next skips
	// what the agent ignores: a start of a copy it holds, a suspend or
	// resume that does not change a copy's state (each new stream restates
	// the live copies that way).
	held, suspended map[int64]bool
}

func (b *bundle) worker(t *testing.T, name string, slots int32, running ...*batchv1.HeldCopy) (*fakeWorker, *batchv1.RegisterResponse) {
	t.Helper()
	return b.workerWith(t, &batchv1.RegisterRequest{Isolation: "namespaces", Name: name, Slots: slots, CanSuspend: true, Hostname: "test", Running: running})
}

// workerWith registers a fake worker with req and opens its stream.
func (b *bundle) workerWith(t *testing.T, req *batchv1.RegisterRequest) (*fakeWorker, *batchv1.RegisterResponse) {
	t.Helper()
	res, err := b.workers.Register(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	name, running := req.Name, req.Running
	w := &fakeWorker{t: t, b: b, name: name, got: make(chan *batchv1.AssignmentsResponse, 1000),
		held: map[int64]bool{}, suspended: map[int64]bool{}}
	for _, c := range running {
		w.held[c.CopyId], w.suspended[c.CopyId] = true, c.Suspended
	}
	w.open()
	return w, res
}

// open opens the Assignments stream and waits until the server holds it,
// by reading the stream's first message or by its headers.
func (w *fakeWorker) open() {
	c, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.t.Cleanup(cancel)
	stream, err := w.b.workers.Assignments(c, &batchv1.AssignmentsRequest{WorkerId: w.name})
	if err != nil {
		w.t.Fatal(err)
	}
	go func() {
		for stream.Receive() {
			w.got <- stream.Msg()
		}
	}()
}

// next returns the next assignment that changes something, failing after
// patience (a bound on a hang, not a measurement).
func (w *fakeWorker) next() *batchv1.AssignmentsResponse {
	w.t.Helper()
	for {
		var m *batchv1.AssignmentsResponse
		select {
		case m = <-w.got:
		case <-time.After(patience):
			w.t.Fatalf("worker %s: no assignment in %v", w.name, patience)
		}
		switch a := m.Action.(type) {
		case *batchv1.AssignmentsResponse_Start:
			if w.held[a.Start.CopyId] {
				continue
			}
			w.held[a.Start.CopyId] = true
		case *batchv1.AssignmentsResponse_Suspend:
			if !w.held[a.Suspend] || w.suspended[a.Suspend] {
				continue
			}
			w.suspended[a.Suspend] = true
		case *batchv1.AssignmentsResponse_Resume:
			if !w.held[a.Resume] || !w.suspended[a.Resume] {
				continue
			}
			w.suspended[a.Resume] = false
		case *batchv1.AssignmentsResponse_Kill:
			if !w.held[a.Kill] {
				continue
			}
			delete(w.held, a.Kill)
		}
		return m
	}
}

// start returns the next assignment, which must be a start.
func (w *fakeWorker) start() *batchv1.StartCopy {
	w.t.Helper()
	m := w.next()
	if m.GetStart() == nil {
		w.t.Fatalf("worker %s: got %v, want a start", w.name, m)
	}
	return m.GetStart()
}

func (w *fakeWorker) finish(copyID int64, stdout string, exit int32, run float64) (*batchv1.ReportFinishedResponse, error) {
	return w.b.workers.ReportFinished(context.Background(), &batchv1.ReportFinishedRequest{WorkerId: w.name, CopyId: copyID,
		ExitCode: exit, Stdout: []byte(stdout), CpuSeconds: run / 2, RunSeconds: run})
}

func (w *fakeWorker) won(copyID int64, stdout string) {
	w.t.Helper()
	res, err := w.finish(copyID, stdout, 0, 2)
	if err != nil {
		w.t.Fatal(err)
	}
	if res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		w.t.Fatalf("copy %d: outcome %v, want WON", copyID, res.Outcome)
	}
}

func TestWorkerProtocol(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, reg := b.worker(t, "w1", 1)
	if reg.WorkerId != "w1" || reg.LeaseSeconds != 15 || reg.HeartbeatSeconds != 3 || reg.OutputCapBytes != 16<<20 {
		t.Fatalf("register: %v", reg)
	}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "p", Tasks: echo(2)})).TaskSet
	st := w.start()
	if st.SetId != set.Id || st.Index != 0 || st.Spec.Argv[0] != "echo" || st.Owner != "admin" || st.Slot != 0 {
		t.Fatalf("start: %v", st)
	}

	t.Run("ErrNotHeld", func(t *testing.T) {
		_, err := w.finish(st.CopyId+1000, "", 0, 1)
		wantCode(t, err, connect.CodeFailedPrecondition)
	})
	t.Run("ErrOtherWorker", func(t *testing.T) {
		other, _ := b.worker(t, "w-other", 0)
		_, err := other.finish(st.CopyId, "", 0, 1)
		wantCode(t, err, connect.CodePermissionDenied)
	})
	t.Run("ErrHeartbeatUnknown", func(t *testing.T) {
		_, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "nobody"})
		wantCode(t, err, connect.CodeNotFound)
	})
	t.Run("ErrAssignmentsUnknown", func(t *testing.T) {
		s, err := b.workers.Assignments(ctx(t), &batchv1.AssignmentsRequest{WorkerId: "nobody"})
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
		}
		wantCode(t, err, connect.CodeNotFound)
	})
	t.Run("ErrRegisterEmpty", func(t *testing.T) {
		_, err := b.workers.Register(ctx(t), &batchv1.RegisterRequest{Slots: 1})
		wantCode(t, err, connect.CodeInvalidArgument)
	})

	// A disclosed task's copy wins: executed, output not readable yet.
	b.clock.Advance(2 * time.Second) // the 2 s each won reports
	w.won(st.CopyId, "out0\n")
	_, err := b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0})
	wantCode(t, err, connect.CodeFailedPrecondition)
	// A replay gets the same answer.
	w.won(st.CopyId, "out0\n")

	// The slot is free again: the next task starts.
	st1 := w.start()
	if st1.Index != 1 {
		t.Fatalf("second start: %v", st1)
	}
	hb, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w1", Copies: []*batchv1.CopyProgress{
		{CopyId: st1.CopyId, Progress: 0.5, CpuSeconds: 1}, {CopyId: 999999, Progress: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hb.Kill) != 1 || hb.Kill[0] != 999999 {
		t.Fatalf("heartbeat kill: %v", hb.Kill)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if p := got.Tasks[1].Progress; p != 0.5 {
		t.Fatalf("progress %v, want 0.5", p)
	}

	// Request both: task 0 finishes at once (executed), billed once.
	req := must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, All: true}))
	if req.FinishedAtOnce != 1 || req.Requested != 1 {
		t.Fatalf("request: %v", req)
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0}))
	if string(out.Stdout) != "out0\n" || out.CopyId != st.CopyId || out.Worker != "w1" || out.SlotSeconds != 2 {
		t.Fatalf("output: %v", out)
	}
	b.clock.Advance(2 * time.Second)
	w.won(st1.CopyId, "out1\n")
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 2 || len(bill.Lines) != 2 || bill.Totals.BilledSlotSeconds != 4 || bill.Totals.BilledCpuSeconds != 2 {
		t.Fatalf("bill: %v", bill)
	}
	if bill.Lines[0].Reason != "executed-then-requested" || bill.Lines[1].Reason != "finished" {
		t.Fatalf("bill reasons: %v", bill.Lines)
	}
	_, err = b.as(b.addUser(t, "plain", "user")).billing.GetBill(ctx(t), &batchv1.GetBillRequest{Owner: "someone-else"})
	wantCode(t, err, connect.CodePermissionDenied)
}

// A worker silent past its lease and the margin loses its copies (not
// before: the worker stops them itself at the lease's end); the task runs
// again on another worker. The lost copy's result, arriving late while
// the task still wants one, is kept: the re-run is killed and the task
// billed once, for the copy that won.
func TestLeaseLapse(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w1, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	c1 := w1.start()
	w2, _ := b.worker(t, "w2", 1)
	b.clock.Advance(10 * time.Second)
	if _, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w2"}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(8 * time.Second) // w1 silent for 18 s: past the 15 s lease, not past its 3.75 s margin
	b.srv.DispatchOnce()
	if _, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w2"}); err != nil {
		t.Fatal(err)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if cs := got.Tasks[0].Copies; len(cs) != 1 || cs[0].State != batchv1.CopyState_COPY_STATE_RUNNING {
		t.Fatalf("copies within the margin: %v", cs)
	}
	b.clock.Advance(2 * time.Second) // w1 silent for 20 s > 15 + 3.75 s; w2 for 2 s
	b.srv.DispatchOnce()
	c2 := w2.start()
	if c2.SetId != set.Id || c2.Index != 0 || c2.CopyId == c1.CopyId {
		t.Fatalf("re-run: %v", c2)
	}
	got = must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if cs := got.Tasks[0].Copies; len(cs) != 2 || cs[0].State != batchv1.CopyState_COPY_STATE_LOST || cs[1].State != batchv1.CopyState_COPY_STATE_RUNNING {
		t.Fatalf("copies: %v", cs)
	}
	_, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w1"})
	wantCode(t, err, connect.CodeNotFound)
	res, err := w1.finish(c1.CopyId, "late", 0, 14)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("late report: %v %v", res, err)
	}
	if k := w2.next(); k.GetKill() != c2.CopyId {
		t.Fatalf("re-run: got %v, want its kill", k)
	}
	b.clock.Advance(time.Second)
	res, err = w2.finish(c2.CopyId, "second", 0, 1)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("re-run's report: %v %v", res, err)
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 0}))
	if string(out.Stdout) != "late" || out.CopyId != c1.CopyId {
		t.Fatalf("output: %v", out)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 1 || bill.Lines[0].CopyId != c1.CopyId || bill.Lines[0].SlotSeconds != 14 {
		t.Fatalf("bill: %v", bill)
	}
	if f := bill.Totals.Free; f.LostWithWorkerSlotSeconds != 0 || f.SpeculativeLostSlotSeconds != 1 {
		t.Fatalf("free %v, want nothing lost with a worker (the lost copy's result was kept) and the killed re-run's 1 s", f)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if f := cl.Metrics.Free; f.LostWithWorkerSlotSeconds != 0 {
		t.Fatalf("cluster: free %v, want nothing lost with a worker", f)
	}
	// A second late result of the same task is not the task's.
	got = must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if got.Tasks[0].State != batchv1.TaskState_TASK_STATE_FINISHED {
		t.Fatalf("task: %v", got.Tasks[0])
	}
}

// A disclosed task's lost copy whose result comes back late executes the
// task (its re-run killed); requested later, it is billed once, for that
// copy, and the lost time is no longer counted lost.
func TestLateResultDisclosed(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w1, _ := b.worker(t, "w1", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})).TaskSet
	c1 := w1.start()
	w2, _ := b.worker(t, "w2", 1)
	b.clock.Advance(20 * time.Second) // both silent past 15 s + 3.75 s
	if _, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w2"}); err != nil {
		t.Fatal(err)
	}
	b.srv.DispatchOnce()
	c2 := w2.start()
	if c2.Index != c1.Index || c2.CopyId == c1.CopyId {
		t.Fatalf("re-run %v of %v", c2, c1)
	}
	res, err := w1.finish(c1.CopyId, "late", 0, 12)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("late report: %v %v", res, err)
	}
	if k := w2.next(); k.GetKill() != c2.CopyId {
		t.Fatalf("re-run: got %v, want its kill", k)
	}
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if got.Tasks[0].State != batchv1.TaskState_TASK_STATE_EXECUTED {
		t.Fatalf("task after the late result: %v", got.Tasks[0])
	}
	req := must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: set.Id, All: true}))
	if req.FinishedAtOnce != 1 {
		t.Fatalf("request: %v", req)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 1 || bill.Lines[0].CopyId != c1.CopyId || bill.Lines[0].Reason != "executed-then-requested" {
		t.Fatalf("bill: %v", bill)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if f := cl.Metrics.Free; f.LostWithWorkerSlotSeconds != 0 || f.ExecutedUnrequestedSlotSeconds != 0 {
		t.Fatalf("cluster: free %v, want nothing lost and nothing unrequested", f)
	}
}

// A worker that registers again keeps the copies it still runs and loses
// the ones it does not list; a copy it killed on its own is lost.
func TestReRegister(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 2)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(3), Request: true})).TaskSet
	a, c := w.start(), w.start()
	w.cancel()
	reg := must[*batchv1.RegisterResponse](t)(b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: 2,
		Running: []*batchv1.HeldCopy{{CopyId: a.CopyId, Slot: a.Slot}, {CopyId: 4242, Slot: 1}}}))
	if len(reg.Kill) != 1 || reg.Kill[0] != 4242 {
		t.Fatalf("kill: %v", reg.Kill)
	}
	w.open()
	// c was lost: its task (or the third) takes the free slot.
	n := w.start()
	if n.CopyId == a.CopyId || n.CopyId == c.CopyId {
		t.Fatalf("start: %v", n)
	}
	// The worker killed a on its own (say, SIGTERM): lost, runs again.
	res, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: a.CopyId, Killed: true, ExitCode: -1})
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("killed report: %v %v", res, err)
	}
	again := w.start()
	if again.CopyId == a.CopyId {
		t.Fatalf("again: %v", again)
	}
	w.won(n.CopyId, "")
	w.won(again.CopyId, "")
	last := w.start()
	w.won(last.CopyId, "")
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if got.TaskSet.Counts.Finished != 3 {
		t.Fatalf("counts: %v", got.TaskSet.Counts)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{}))
	if bill.Totals.Lines != 3 {
		t.Fatalf("bill lines %d, want 3", bill.Totals.Lines)
	}
}

// A copy its worker leaves out of its heartbeats for longer than a lease
// (say, its start was lost with a broken stream) is lost and runs again.
func TestMissingCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	c := w.start()
	beat := func() {
		t.Helper()
		if _, err := b.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	beat()
	b.clock.Advance(10 * time.Second)
	beat() // missing for 10 s: not yet
	b.clock.Advance(10 * time.Second)
	beat() // missing for 20 s > 15 s lease: lost, started again
	again := w.start()
	if again.CopyId == c.CopyId || again.Index != c.Index {
		t.Fatalf("again: %v after %v", again, c)
	}
	// The re-run's result came first: the lost copy's, after it, is not
	// the task's.
	w.won(again.CopyId, "")
	res, err := w.finish(c.CopyId, "", 0, 1)
	if err != nil || res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
		t.Fatalf("report of the lost copy: %v %v", res, err)
	}
}

// Requested work takes the slot of a running disclosed copy by suspending
// it; the copy resumes when the slot frees up.
func TestPreemptSuspend(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	first := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
	disc := w.start()
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	if m := w.next(); m.GetSuspend() != disc.CopyId {
		t.Fatalf("want suspend of %d, got %v", disc.CopyId, m)
	}
	req := w.start()
	b.clock.Advance(2 * time.Second) // the 2 s each won reports
	w.won(req.CopyId, "")
	if m := w.next(); m.GetResume() != disc.CopyId {
		t.Fatalf("want resume of %d, got %v", disc.CopyId, m)
	}
	b.clock.Advance(2 * time.Second)
	w.won(disc.CopyId, "")
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cl.Metrics.FinishedTasks != 1 || cl.Metrics.BilledSlotSeconds != 2 || cl.Metrics.FreeSlotSeconds != 2 || cl.BusySlots != 0 {
		t.Fatalf("metrics: %v", cl.Metrics)
	}
	// Requesting the executed task bills it: its work is no longer free.
	must[*batchv1.RequestResponse](t)(b.tasks.Request(ctx(t), &batchv1.RequestRequest{SetId: first.TaskSet.Id, All: true}))
	cl = must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cl.Metrics.FinishedTasks != 2 || cl.Metrics.BilledSlotSeconds != 4 || cl.Metrics.FreeSlotSeconds != 0 {
		t.Fatalf("metrics after requesting the executed task: %v", cl.Metrics)
	}
}

// A new Assignments stream restates the worker's live copies, so a start
// or a suspend swallowed by a broken stream still arrives.
func TestRestateOnReconnect(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.worker(t, "w", 1)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)}))
	disc := w.start()
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true}))
	if m := w.next(); m.GetSuspend() != disc.CopyId {
		t.Fatalf("want suspend, got %v", m)
	}
	req := w.start()
	// Say the stream broke and both messages were lost on the way.
	w.cancel()
	w.held, w.suspended = map[int64]bool{}, map[int64]bool{}
	w.open()
	got := map[int64]string{}
	for range 3 {
		switch m := w.next(); {
		case m.GetStart() != nil:
			got[m.GetStart().CopyId] += "start "
		case m.GetSuspend() != 0:
			got[m.GetSuspend()] += "suspend "
		default:
			t.Fatalf("unexpected %v", m)
		}
	}
	if got[disc.CopyId] != "start suspend " || got[req.CopyId] != "start " {
		t.Fatalf("restated: %v", got)
	}
}
