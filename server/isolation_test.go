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
	if !cl.ShareUnisolatedWorkers || cl.Workers[0].Isolation != "none" || cl.Workers[0].BoundUser != "" || cl.Slots != 1 {
		t.Fatalf("cluster %v", cl)
	}
	// Restarted without sharing, the server restores that worker with no
	// slots: it gets nothing until it registers again (refused).
	shared.close()
	again := setup(t, options{dir: shared.dir})
	cl = must[*batchv1.GetClusterResponse](t)(again.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cl.ShareUnisolatedWorkers || cl.Slots != 0 {
		t.Fatalf("after a restart without sharing: %d slots, sharing %v", cl.Slots, cl.ShareUnisolatedWorkers)
	}
	_, err := again.workers.Register(ctx(t), &batchv1.RegisterRequest{Name: "bare", Slots: 1})
	wantCode(t, err, connect.CodeFailedPrecondition)
}

// A worker bound to bob gets bob's task and not alice's; Why tells alice
// why, also after a restart (the binding is restored from the store).
func TestBoundWorkerScheduling(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	alice := b.as(b.addUser(t, "alice", "user"))
	bob := b.as(b.addUser(t, "bob", "user"))
	w, _ := b.workerWith(t, &batchv1.RegisterRequest{Name: "wb", Slots: 2, BoundUser: "bob", CanSuspend: true})
	aset := must[*batchv1.DiscloseResponse](t)(alice.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	bset := must[*batchv1.DiscloseResponse](t)(bob.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1), Request: true})).TaskSet
	st := w.start()
	if st.SetId != bset.Id {
		t.Fatalf("bob's worker started set %d, want bob's %d", st.SetId, bset.Id)
	}
	why := func(b *bundle) *batchv1.TaskWhy {
		res := must[*batchv1.WhyResponse](t)(b.as(adminToken(t, b.dir)).tasks.Why(ctx(t), &batchv1.WhyRequest{SetId: aset.Id, Indexes: []int32{0}}))
		return res.Tasks[0]
	}
	want := "no worker may run alice's tasks: worker wb runs only bob's"
	if a := why(b); a.Reason != batchv1.WaitReason_WAIT_REASON_NO_WORKER_FOR_OWNER || a.ReasonText != want {
		t.Fatalf("why: %v %q", a.Reason, a.ReasonText)
	}
	b.close()
	b2 := setup(t, options{dir: b.dir})
	if a := why(b2); a.Reason != batchv1.WaitReason_WAIT_REASON_NO_WORKER_FOR_OWNER || a.ReasonText != want {
		t.Fatalf("why after a restart: %v %q", a.Reason, a.ReasonText)
	}
}
