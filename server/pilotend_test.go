package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// 200 pilot lifetimes, through the worker protocol: each registers, says
// goodbye (zero slots) and falls silent; others are killed with their job
// and only lapse. The goodbyes are gone at their lapse, the lapsed ones
// after the retention; the cluster view and a pool's report list the live
// workers only, and every worker with all_workers.
func TestPilotLifetimesLeaveRows(t *testing.T) {
	b := setup(t, options{})
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	const n = 200
	for i := range n {
		name := fmt.Sprintf("slurm-%d", i)
		b.worker(t, name, 1)
		if i%2 == 0 { // idle exit or hand-back: a goodbye
			b.worker(t, name, 0)
		}
	}
	b.worker(t, "slurm-live", 1)
	b.clock.Advance(time.Minute) // past every lease
	b.srv.DispatchOnce()
	// The live one heartbeats on.
	b.worker(t, "slurm-live", 1)
	live := func(all bool) (ws []*batchv1.Worker) {
		cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{AllWorkers: all}))
		return cl.Workers
	}
	if ws := live(false); len(ws) != 1+n/2 {
		t.Fatalf("cluster lists %d workers after the goodbyes lapsed, want %d (the live one and the lapsed)", len(ws), 1+n/2)
	}
	b.clock.Advance(2 * time.Hour) // past the retention
	b.worker(t, "slurm-live", 1)
	b.srv.DispatchOnce()
	ws := live(false)
	if len(ws) != 1 || ws[0].Name != "slurm-live" || ws[0].State != "up" {
		t.Fatalf("cluster lists %v, want slurm-live alone", ws)
	}
	all := live(true)
	gone := 0
	for _, w := range all {
		if w.State == "gone" && w.LeftAt != nil {
			gone++
		}
	}
	if len(all) != n+1 || gone != n {
		t.Fatalf("--all lists %d workers, %d gone with their time, want %d and %d", len(all), gone, n+1, n)
	}
	res, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workers) != 1 || res.Workers[0].State != "up" || res.LeaseSeconds <= 0 {
		t.Fatalf("pool's report: %v (lease %v), want slurm-live up", res.Workers, res.LeaseSeconds)
	}
}

// A worker's end is given to the scheduler: no copy whose estimate does
// not fit before it starts there, one that fits does; an end in the past
// or too far ahead is refused.
func TestRegisterWorkerEnd(t *testing.T) {
	b := setup(t, options{})
	now := b.clock.Now()
	w, _ := b.workerWith(t, &batchv1.RegisterRequest{Isolation: "namespaces", Name: "pilot", Slots: 1, Hostname: "test",
		EndsAt: timestamppb.New(now.Add(100 * time.Second)), HandBack: true})
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "s", Request: true,
		Tasks: []*batchv1.TaskSpec{{Argv: []string{"long"}, EstimateSeconds: 500}, {Argv: []string{"short"}, EstimateSeconds: 50}}}))
	b.srv.DispatchOnce()
	start := w.next()
	if st := start.GetStart(); st == nil || st.GetSpec().GetArgv()[0] != "short" {
		t.Fatalf("first order %v, want the short task's start", start)
	}
	why := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: start.GetStart().GetSetId(), Indexes: []int32{0}}))
	if r := why.Tasks[0].Reason; r != batchv1.WaitReason_WAIT_REASON_NO_WORKER_TIME_LEFT {
		t.Errorf("why the long task waits: %v, want NO_WORKER_TIME_LEFT", r)
	}
	for _, end := range []time.Time{time.Unix(-5, 0), now.Add(20 * 365 * 24 * time.Hour)} {
		if _, err := b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "bad", Slots: 1,
			EndsAt: timestamppb.New(end)}); err == nil {
			t.Errorf("end %v accepted", end)
		}
	}
}

// A pilot's hand-back is one loss to a pilot end. The server starts
// nothing more on a pilot once it handed a copy back, though its slot is
// free until its goodbye; and a copy its goodbye shows it never started
// is not a loss. With a limit of two, the task runs on the next pilot and
// fails at its second hand-back, with its reason.
func TestPilotHandBackCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, options{pilotLosses: 2})
	pilot := func(name string) *fakeWorker {
		w, _ := b.workerWith(t, &batchv1.RegisterRequest{Isolation: "namespaces", Name: name, Slots: 1, Hostname: "test", HandBack: true})
		return w
	}
	handBack := func(w *fakeWorker, id int64) {
		t.Helper()
		res, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: w.name, CopyId: id, Killed: true,
			ExitCode: 143, RunSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_DISCARDED {
			t.Fatalf("hand-back of copy %d: %v, want DISCARDED", id, res.Outcome)
		}
	}
	task := func(set int64) *batchv1.Task {
		t.Helper()
		return must[*batchv1.GetTaskResponse](t)(b.tasks.GetTask(ctx(t), &batchv1.GetTaskRequest{SetId: set})).Task
	}
	first := pilot("slurm-1")
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "long", Request: true,
		Tasks: []*batchv1.TaskSpec{{Argv: []string{"sleep", "1000"}}}})).TaskSet.Id
	a := first.start()
	handBack(first, a.CopyId)
	b.srv.DispatchOnce()
	// The goodbye: no slots, holding nothing (the copy was reported).
	if _, err := b.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "slurm-1", Hostname: "test",
		HandBack: true, Stopping: true}); err != nil {
		t.Fatal(err)
	}
	if tk := task(set); tk.State != batchv1.TaskState_TASK_STATE_REQUESTED || tk.FailReason != "" {
		t.Fatalf("after one hand-back and the goodbye: %s (%q), want requested", tk.State, tk.FailReason)
	}
	for _, c := range task(set).Copies {
		if c.Id != a.CopyId && c.Worker == "slurm-1" {
			t.Errorf("copy %d started on slurm-1 after its hand-back", c.Id)
		}
	}
	second := pilot("slurm-2")
	c := second.start()
	handBack(second, c.CopyId)
	if tk := task(set); tk.State != batchv1.TaskState_TASK_STATE_CANCELED || !strings.Contains(tk.FailReason, "lost 2 times to pilot ends") {
		t.Fatalf("after the second hand-back: %s (%q), want canceled, lost 2 times", tk.State, tk.FailReason)
	}
}
