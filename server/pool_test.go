package server_test

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// A pool reports its pilots with a worker token: the answer carries the
// queue lengths and the workers up; GetCluster lists the pilots and the
// pool's error; /metrics counts pilots by state; another worker token
// cannot report the same pool; a user token cannot report at all; a pool
// silent for two minutes is forgotten.
func TestReportPilots(t *testing.T) {
	b := setup(t, options{})
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	// Three requested tasks wait; one worker is up.
	must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "s", Request: true,
		Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}, EstimateSeconds: 900}, {Argv: []string{"true"}, EstimateSeconds: 60}}}))
	b.worker(t, "slurm-7", 0)
	started := timestamppb.New(time.Unix(1_700_000_000, 0))
	req := &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm", LastError: "sbatch: error: invalid partition specified: nope",
		Pilots: []*batchv1.Pilot{
			{Id: "7", State: "RUNNING", Node: "n1", Slots: 4, Worker: "slurm-7", StartedAt: started, Class: "requested"},
			{Id: "8", State: "PENDING", Reason: "Resources", Slots: 4, Worker: "slurm-8", Class: "disclosed"},
		}}
	res, err := pool.workers.ReportPilots(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.QueuedRequested != 3 || res.QueuedDisclosed != 0 {
		t.Fatalf("queues %d requested, %d disclosed; want 3 and 0", res.QueuedRequested, res.QueuedDisclosed)
	}
	if res.LongestQueuedSeconds != 900 {
		t.Fatalf("longest queued task: %g s, want 900 (its estimate)", res.LongestQueuedSeconds)
	}
	if len(res.Workers) != 1 || res.Workers[0].Name != "slurm-7" {
		t.Fatalf("workers up: %v, want slurm-7", res.Workers)
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if len(cl.Pilots) != 2 || cl.Pilots[0].Id != "7" || cl.Pilots[0].Pool != "p" || cl.Pilots[1].Reason != "Resources" ||
		!cl.Pilots[0].StartedAt.AsTime().Equal(started.AsTime()) {
		t.Fatalf("pilots %v", cl.Pilots)
	}
	if len(cl.Pools) != 1 || !strings.Contains(cl.Pools[0].LastError, "invalid partition") {
		t.Fatalf("pools %v", cl.Pools)
	}
	m := metricsText(t, b)
	for _, want := range []string{`batchd_pilots{state="RUNNING"} 1`, `batchd_pilots{state="PENDING"} 1`, `batchd_pilots{state="FAILED"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	other := b.as(b.addUser(t, "other", store.RoleWorker))
	if _, err := other.workers.ReportPilots(ctx(t), req); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("another worker token reporting pool p: %v, want PermissionDenied", err)
	}
	user := b.as(b.addUser(t, "alice", store.RoleUser))
	if _, err := user.workers.ReportPilots(ctx(t), req); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a user token: %v, want PermissionDenied", err)
	}
	if _, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("no pool name: %v, want InvalidArgument", err)
	}

	b.clock.Advance(3 * time.Minute)
	cl = must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if len(cl.Pilots) != 0 || len(cl.Pools) != 0 {
		t.Fatalf("a pool silent for 3 minutes is still listed: %v %v", cl.Pools, cl.Pilots)
	}
	if _, err := other.workers.ReportPilots(ctx(t), req); err != nil {
		t.Fatalf("once forgotten, the name is free: %v", err)
	}
}
