package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// A worker without isolation must be bound to a user unless the server
// shares unisolated workers; an unknown mechanism is refused; GetCluster
// and /metrics show each worker's isolation and bound user.
func TestRegisterIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	reg := func(r *batchv1.RegisterRequest) error {
		_, err := b.workers.Register(ctx(t), r)
		return err
	}
	wantCode(t, reg(&batchv1.RegisterRequest{Name: "bare", Slots: 1}), connect.CodeFailedPrecondition)
	wantCode(t, reg(&batchv1.RegisterRequest{Name: "bare", Slots: 1, Isolation: "none"}), connect.CodeFailedPrecondition)
	wantCode(t, reg(&batchv1.RegisterRequest{Name: "odd", Slots: 1, Isolation: "chroot"}), connect.CodeInvalidArgument)
	for _, r := range []*batchv1.RegisterRequest{
		{Name: "w-bob", Slots: 1, BoundUser: "bob", Limits: "pids (rlimit)"},
		{Name: "w-ns", Slots: 1, Isolation: "namespaces", Limits: "cpu,memory,pids (cgroup v2)"},
		{Name: "w-uid", Slots: 1, Isolation: "uid"},
	} {
		if err := reg(r); err != nil {
			t.Fatalf("register %s: %v", r.Name, err)
		}
	}
	cl := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cl.ShareUnisolatedWorkers {
		t.Fatal("the server says it shares unisolated workers")
	}
	got := map[string]string{}
	for _, w := range cl.Workers {
		got[w.Id] = w.Isolation + "/" + w.BoundUser + "/" + w.Limits
	}
	want := map[string]string{"w-bob": "none/bob/pids (rlimit)", "w-ns": "namespaces//cpu,memory,pids (cgroup v2)", "w-uid": "uid//"}
	if len(got) != len(want) {
		t.Fatalf("workers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("worker %s: %q, want %q", k, got[k], v)
		}
	}
	m := metricsText(t, b)
	for _, line := range []string{`batchd_worker_isolation{bound_user="bob",mechanism="none",worker="w-bob"} 1`,
		`batchd_worker_isolation{bound_user="",mechanism="namespaces",worker="w-ns"} 1`} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	shared := setup(t, options{shareUnisolated: true})
	if _, err := shared.workers.Register(ctx(t), &batchv1.RegisterRequest{Name: "bare", Slots: 1}); err != nil {
		t.Fatalf("with sharing on: %v", err)
	}
	cl = must[*batchv1.GetClusterResponse](t)(shared.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if !cl.ShareUnisolatedWorkers || cl.Workers[0].Isolation != "none" || cl.Workers[0].BoundUser != "" {
		t.Fatalf("cluster %v", cl)
	}
}
