package server_test

import (
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
