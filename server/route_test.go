package server_test

import (
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// A pool's report is answered with the queued work it may run, per
// partition that work names: routed to the pool or to no pool, never to
// another pool. A disclose routed where no worker has registered is
// accepted and says so; a bad pool name is InvalidArgument.
func TestRoutesAtTheServer(t *testing.T) {
	b := setup(t, options{})
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	tasks := func(n int) []*batchv1.TaskSpec {
		ts := make([]*batchv1.TaskSpec, n)
		for i := range ts {
			ts[i] = &batchv1.TaskSpec{Argv: []string{"true"}}
		}
		return ts
	}
	for _, d := range []*batchv1.DiscloseRequest{
		{Name: "plain", Request: true, Tasks: tasks(1)},
		{Name: "long", Request: true, Tasks: tasks(2), Pool: "p", Partition: "long"},
		{Name: "anywhere-long", Tasks: tasks(3), Partition: "long"},
		{Name: "other", Request: true, Tasks: tasks(4), Pool: "other"},
	} {
		res := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), d))
		if got, want := res.UnknownRoute, d.Pool != "" || d.Partition != ""; got != want {
			t.Errorf("set %s: unknown_route %v, want %v (no worker registered anywhere)", d.Name, got, want)
		}
		if res.TaskSet.Pool != d.Pool || res.TaskSet.Partition != d.Partition {
			t.Errorf("set %s: route %q/%q, want %q/%q", d.Name, res.TaskSet.Pool, res.TaskSet.Partition, d.Pool, d.Partition)
		}
	}
	res, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm"})
	if err != nil {
		t.Fatal(err)
	}
	if res.QueuedRequested != 7 {
		t.Errorf("queued_requested %d, want all 7", res.QueuedRequested)
	}
	got := map[string][2]int64{}
	for _, q := range res.PartitionQueues {
		got[q.Partition] = [2]int64{q.QueuedRequested, q.QueuedDisclosed}
	}
	want := map[string][2]int64{"": {1, 0}, "long": {2, 3}}
	if len(got) != len(want) || got[""] != want[""] || got["long"] != want["long"] || res.PartitionQueues[0].Partition != "" {
		t.Errorf("partition_queues %v, want %v with no partition first", res.PartitionQueues, want)
	}
	// Once a worker of pool other has registered, a set routed there is
	// no news.
	if _, err := pool.workers.Register(ctx(t), &batchv1.RegisterRequest{Name: "o1", Slots: 0, Pool: "other", Isolation: "uid"}); err != nil {
		t.Fatal(err)
	}
	again := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "other2", Tasks: tasks(1), Pool: "other"}))
	if again.UnknownRoute {
		t.Error("a set routed to a pool a worker registered in is reported unknown")
	}
	if _, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "bad", Tasks: tasks(1), Pool: "a pool"}); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("pool name with a space: %v, want InvalidArgument", err)
	}
}
