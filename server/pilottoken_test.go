package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/store"
)

// mint mints a pilot token for worker with the pool's clients.
func mint(t *testing.T, pool clients, worker string, ttl time.Duration) string {
	t.Helper()
	res, err := pool.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: worker, TtlSeconds: ttl.Seconds()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Token
}

func register(t *testing.T, c clients, name string) error {
	_, err := c.workers.Register(ctx(t), &batchv1.RegisterRequest{Isolation: "namespaces", Name: name, Slots: 1})
	return err
}

// A pool mints one token per pilot: it registers its pilot's worker name
// and no other, speaks for no other worker, cannot report pilots, mint or
// call the user API; user and admin tokens cannot mint.
func TestPilotTokenScope(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	pilot := b.as(mint(t, pool, "slurm-7", time.Hour))

	if err := register(t, pilot, "slurm-8"); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a pilot token registering another name: %v, want PermissionDenied", err)
	}
	if err := register(t, pilot, "slurm-7"); err != nil {
		t.Fatalf("a pilot token registering its own name: %v", err)
	}
	// The pool's other worker, under the same worker user: the pilot token
	// may not speak for it.
	if err := register(t, pool, "slurm-9"); err != nil {
		t.Fatal(err)
	}
	_, err := pilot.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "slurm-9"})
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = pilot.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "slurm-9", CopyId: 1})
	wantCode(t, err, connect.CodePermissionDenied)
	if _, err := pilot.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "slurm-7"}); err != nil {
		t.Fatalf("its own heartbeat: %v", err)
	}
	_, err = pilot.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p"})
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = pilot.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-10"})
	wantCode(t, err, connect.CodePermissionDenied)
	// A worker token is never a user's API token, nor a user's a worker's.
	_, err = pilot.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: echo(1)})
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = pilot.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{})
	wantCode(t, err, connect.CodePermissionDenied)
	user := b.as(b.addUser(t, "alice", store.RoleUser))
	_, err = user.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-11"})
	wantCode(t, err, connect.CodePermissionDenied)
	err = register(t, user, "slurm-11")
	wantCode(t, err, connect.CodePermissionDenied)
	admin := b.as(adminToken(t, b.dir))
	_, err = admin.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-11"})
	wantCode(t, err, connect.CodePermissionDenied)
	// The local slots' in-process token is no pool's.
	_, err = b.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-11"})
	wantCode(t, err, connect.CodePermissionDenied)
	// Another worker user cannot mint a name the pool holds.
	other := b.as(b.addUser(t, "other", store.RoleWorker))
	_, err = other.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-7"})
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = pool.workers.MintWorkerToken(ctx(t), &batchv1.MintWorkerTokenRequest{Worker: "slurm-12", TtlSeconds: -1})
	wantCode(t, err, connect.CodeInvalidArgument)
}

// A pilot's token stops working when its pool reports the pilot ended,
// when the pool no longer lists it, and when it expires.
func TestPilotTokenEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	pool := b.as(b.addUser(t, "pool", store.RoleWorker))
	ended := b.as(mint(t, pool, "slurm-1", time.Hour))
	vanished := b.as(mint(t, pool, "slurm-2", time.Hour))
	expiring := b.as(mint(t, pool, "slurm-3", time.Minute))
	running := b.as(mint(t, pool, "slurm-4", time.Hour))
	for _, c := range []clients{ended, vanished, expiring, running} {
		if _, err := c.workers.Heartbeat(ctx(t), &batchv1.HeartbeatRequest{WorkerId: "x"}); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("a fresh pilot token: %v, want PermissionDenied (authenticated, wrong worker)", err)
		}
	}
	report := func(pilots ...*batchv1.Pilot) {
		t.Helper()
		if _, err := pool.workers.ReportPilots(ctx(t), &batchv1.ReportPilotsRequest{Pool: "p", Engine: "slurm", Pilots: pilots}); err != nil {
			t.Fatal(err)
		}
	}
	report(&batchv1.Pilot{Id: "1", State: "RUNNING", Worker: "slurm-1"}, &batchv1.Pilot{Id: "2", State: "RUNNING", Worker: "slurm-2"},
		&batchv1.Pilot{Id: "4", State: "RUNNING", Worker: "slurm-4"})
	if err := register(t, ended, "slurm-1"); err != nil {
		t.Fatal(err)
	}
	report(&batchv1.Pilot{Id: "1", State: "COMPLETED", Worker: "slurm-1", Ended: true}, &batchv1.Pilot{Id: "4", State: "RUNNING", Worker: "slurm-4"})
	err := register(t, ended, "slurm-1")
	wantCode(t, err, connect.CodeUnauthenticated)
	err = register(t, vanished, "slurm-2")
	wantCode(t, err, connect.CodeUnauthenticated)
	if err := register(t, expiring, "slurm-3"); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	b.clock.Advance(time.Minute)
	err = register(t, expiring, "slurm-3")
	wantCode(t, err, connect.CodeUnauthenticated)
	if err := register(t, running, "slurm-4"); err != nil {
		t.Fatalf("a running pilot's token: %v", err)
	}
}
