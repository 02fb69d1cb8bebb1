package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/server"
	"batchd/worker"
)

// After a restart the server rebuilds its scheduler from the store: a
// worker that comes back with its copy keeps it, one that comes back
// without its copies has them lost and run again; every requested task
// finishes and is billed exactly once.
func TestRestart(t *testing.T) {
	t.Parallel()
	dir, clk := t.TempDir(), newClock()
	b := setup(t, options{dir: dir, clock: clk})
	remote, _ := b.worker(t, "remote", 1)
	local, _ := b.worker(t, "local-host", 1)
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "r", Tasks: echo(3), Request: true, IdempotencyKey: "once"})).TaskSet
	cr, cl := remote.start(), local.start()
	b.close()

	b = setup(t, options{dir: dir, clock: clk})
	// Before anyone registers, nothing new starts: both slots are held.
	b.srv.DispatchOnce()
	cluster := must[*batchv1.GetClusterResponse](t)(b.cluster.GetCluster(ctx(t), &batchv1.GetClusterRequest{}))
	if cluster.Slots != 2 || cluster.BusySlots != 2 || cluster.Queues.Requested != 1 {
		t.Fatalf("after restart: slots %d busy %d queued %d", cluster.Slots, cluster.BusySlots, cluster.Queues.Requested)
	}
	// The acknowledged disclose survived; replaying it creates nothing.
	again := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Name: "r", Tasks: echo(3), Request: true, IdempotencyKey: "once"}))
	if !again.Replayed || again.TaskSet.Id != set.Id {
		t.Fatalf("replay: %v", again)
	}
	remote, reg := b.worker(t, "remote", 1, &batchv1.HeldCopy{CopyId: cr.CopyId, Slot: cr.Slot})
	if len(reg.Kill) != 0 {
		t.Fatalf("kill: %v", reg.Kill)
	}
	local, _ = b.worker(t, "local-host", 1) // the embedded slots come back empty
	next := local.start()
	if next.CopyId <= cl.CopyId {
		t.Fatalf("copy ids must grow across restarts: %d after %d", next.CopyId, cl.CopyId)
	}
	remote.won(cr.CopyId, "r")
	local.won(next.CopyId, "l")
	last := remote.start()
	remote.won(last.CopyId, "x")
	got := must[*batchv1.GetTaskSetResponse](t)(b.tasks.GetTaskSet(ctx(t), &batchv1.GetTaskSetRequest{SetId: set.Id}))
	if got.TaskSet.Counts.Finished != 3 {
		t.Fatalf("counts: %v", got.TaskSet.Counts)
	}
	bill := must[*batchv1.GetBillResponse](t)(b.billing.GetBill(ctx(t), &batchv1.GetBillRequest{IncludeLines: true}))
	if bill.Totals.Lines != 3 {
		t.Fatalf("bill: %v", bill.Lines)
	}
	seen := map[int32]bool{}
	for _, l := range bill.Lines {
		if seen[l.Index] {
			t.Fatalf("task %d billed twice", l.Index)
		}
		seen[l.Index] = true
	}
}

// End to end with the real worker agent running real processes: disclose,
// request, watch until finished, read outputs.
func TestRealWorker(t *testing.T) {
	t.Parallel()
	// ShareUnisolated: its worker may report no isolation; these tests are
	// not about isolation (server/isolation_test.go is).
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TickInterval: 50 * time.Millisecond, Logger: logger(),
		ShareUnisolated: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(wctx, worker.Config{Server: srv.URL(), Name: "real", Slots: 2, StateDir: filepath.Join(t.TempDir(), "w"), Logger: logger(),
			ClientOptions: []connect.ClientOption{withToken(srv.LocalWorkerToken())}})
	}()
	t.Cleanup(func() { stop(); <-done })

	hc := worker.NewHTTPClient()
	b := &bundle{srv: srv}
	b.tasks = newTaskClient(hc, srv.URL(), srv.AdminToken())
	var tasks []*batchv1.TaskSpec
	for i := 0; i < 4; i++ {
		tasks = append(tasks, &batchv1.TaskSpec{Argv: []string{"sh", "-c", "echo hello $BATCH_TASK_INDEX; echo err >&2; exit " + fmt.Sprint(i%2)}})
	}
	tasks = append(tasks, &batchv1.TaskSpec{Argv: []string{"/nonexistent/command"}})
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: tasks, Request: true})).TaskSet
	stream, err := b.tasks.WatchTaskSet(ctx(t), &batchv1.WatchTaskSetRequest{SetId: set.Id})
	if err != nil {
		t.Fatal(err)
	}
	first := true
	for stream.Receive() {
		m := stream.Msg()
		if first != m.Snapshot {
			t.Fatalf("snapshot flag %v on message %v", m.Snapshot, m)
		}
		if first && len(m.Tasks) != 5 {
			t.Fatalf("snapshot has %d tasks", len(m.Tasks))
		}
		first = false
		if m.TaskSet.Counts.Finished == 5 {
			break
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	for i := int32(0); i < 4; i++ {
		out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: i}))
		if string(out.Stdout) != fmt.Sprintf("hello %d\n", i) || string(out.Stderr) != "err\n" || out.ExitCode != i%2 || out.Worker != "real" {
			t.Fatalf("task %d output: %v", i, out)
		}
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id, Index: 4}))
	if out.ExitCode != 127 || !strings.Contains(string(out.Stderr), "nonexistent") {
		t.Fatalf("start error output: %v", out)
	}
}
