package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// TestDiscloseRefusesWhatNoWorkerHolds: with a worker of 2 slots up, a
// task asking for 4 is FailedPrecondition; once a pool reports pilots of
// 4 slots it is accepted (a pilot can hold it), and 8 is still refused.
func TestDiscloseRefusesWhatNoWorkerHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.worker(t, "w", 2)
	cpus := func(n int32) *batchv1.DiscloseRequest {
		return &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}, Cpus: n}}}
	}
	_, err := b.tasks.Disclose(ctx(t), cpus(4))
	wantCode(t, err, connect.CodeFailedPrecondition)
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), cpus(2)))
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	if _, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm",
		Pilots: []*batchv1.Pilot{{Id: "7", State: "PENDING", Slots: 4, Worker: "slurm-7"}}}); err != nil {
		t.Fatal(err)
	}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), cpus(4))).TaskSet
	_, err = b.tasks.Disclose(ctx(t), cpus(8))
	wantCode(t, err, connect.CodeFailedPrecondition)
	w := must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: set.Id, Indexes: []int32{0}}))
	if r := w.Tasks[0].Reason; r != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES {
		t.Errorf("why of a 4-cpu task a pool's pilot could hold: %v, want waiting for resources", r)
	}
}

// TestDiscloseRefusesGPUsNoWorkerHas: with a worker of 2 GPUs up, a task
// asking for 3 is FailedPrecondition; one asking for 2 is taken and, while
// another copy holds a GPU, why says it waits for GPUs. Once a pool
// reports pilots, 3 GPUs are accepted (a pilot asks for them) and why
// says a pilot may bring them.
func TestDiscloseRefusesGPUsNoWorkerHas(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w, _ := b.workerWith(t, &batchv1.RegisterRequest{Isolation: "namespaces", Name: "gpu", Slots: 4, Hostname: "test", Gpus: 2})
	gpus := func(n ...int32) *batchv1.DiscloseRequest {
		req := &batchv1.DiscloseRequest{Request: true}
		for _, g := range n {
			req.Tasks = append(req.Tasks, &batchv1.TaskSpec{Argv: []string{"true"}, Gpus: g})
		}
		return req
	}
	_, err := b.tasks.Disclose(ctx(t), gpus(3))
	wantCode(t, err, connect.CodeFailedPrecondition)
	if !strings.Contains(err.Error(), "3 GPUs") {
		t.Errorf("refusal %q does not name the GPUs", err)
	}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), gpus(1, 2))).TaskSet
	b.srv.DispatchOnce()
	if st := w.start(); st.Index != 0 {
		t.Fatalf("started task %d, want 0", st.Index)
	}
	why := func(set int64, index int32) *batchv1.TaskWhy {
		t.Helper()
		return must[*batchv1.WhyResponse](t)(b.tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: set, Indexes: []int32{index}})).Tasks[0]
	}
	if a := why(set.Id, 1); a.Reason != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES || !strings.Contains(a.ReasonText, "waiting for GPUs") {
		t.Errorf("why of a 2-GPU task with 1 free: %v %q, want waiting for GPUs", a.Reason, a.ReasonText)
	}
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	if _, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm",
		Pilots: []*batchv1.Pilot{{Id: "7", State: "PENDING", Slots: 1, Worker: "slurm-7"}}}); err != nil {
		t.Fatal(err)
	}
	big := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), gpus(3))).TaskSet
	if a := why(big.Id, 0); a.Reason != batchv1.WaitReason_WAIT_REASON_WAITING_FOR_RESOURCES || !strings.Contains(a.ReasonText, "a pool may start a pilot") {
		t.Errorf("why of a 3-GPU task with a pool: %v %q, want a pilot may bring them", a.Reason, a.ReasonText)
	}
}
