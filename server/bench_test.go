package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/server"
	"batchd/worker"
)

// BenchmarkBigSet times one disclose of 100,000 tasks, paging through them
// 10,000 at a time, and one cancel of the set, each through the Connect
// client against a server on 127.0.0.1 with a SQLite file:
//
//	go test -run '^$' -bench BigSet -benchtime 3x ./server
func BenchmarkBigSet(b *testing.B) {
	const n = 100_000
	tasks := make([]*batchv1.TaskSpec, n)
	for i := range tasks {
		tasks[i] = &batchv1.TaskSpec{Argv: []string{"sh", "-c", "echo task"}}
	}
	var disclose, list, cancel time.Duration
	for b.Loop() {
		b.StopTimer()
		bu := setup(b, options{})
		b.StartTimer()
		t0 := time.Now()
		set, err := bu.tasks.Disclose(ctx(b), &batchv1.DiscloseRequest{Tasks: tasks})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		token := ""
		for {
			page, err := bu.tasks.GetTaskSet(ctx(b), &batchv1.GetTaskSetRequest{SetId: set.TaskSet.Id, PageSize: 10000, PageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		t2 := time.Now()
		if _, err := bu.tasks.Cancel(ctx(b), &batchv1.CancelRequest{SetId: set.TaskSet.Id, All: true}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		disclose, list, cancel = disclose+t1.Sub(t0), list+t2.Sub(t1), cancel+t3.Sub(t2)
		b.StopTimer()
		bu.close()
		b.StartTimer()
	}
	b.ReportMetric(disclose.Seconds()/float64(b.N), "disclose-s")
	b.ReportMetric(list.Seconds()/float64(b.N), "list-s")
	b.ReportMetric(cancel.Seconds()/float64(b.N), "cancel-s")
}

// BenchmarkPipeline runs b.N tasks of `true` through disclose (requested)
// → dispatch → the real worker agent with 64 slots in this process, on the
// in-process transport as batchd serve's slots →
// finish → bill, and reports tasks per second. The bench/ package measures
// the same with the real binaries; this one is for profiling the server:
//
//	go test -run '^$' -bench Pipeline -benchtime 1000x -cpuprofile cpu.out ./server
func BenchmarkPipeline(b *testing.B) {
	// ShareUnisolated: its worker may report no isolation; these tests are
	// not about isolation (server/isolation_test.go is).
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: b.TempDir(), Logger: logger(), ShareUnisolated: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(wctx, worker.Config{Transport: srv.LocalTransport(), Name: "bench", Slots: 64, StateDir: filepath.Join(b.TempDir(), "w"), Logger: logger()})
	}()
	defer func() { stop(); <-done }()
	tasks := newTaskClient(worker.NewHTTPClient(), srv.URL(), srv.AdminToken())
	specs := make([]*batchv1.TaskSpec, b.N)
	for i := range specs {
		specs[i] = &batchv1.TaskSpec{Argv: []string{"true"}}
	}
	b.ResetTimer()
	start := time.Now()
	set, err := tasks.Disclose(ctx(b), &batchv1.DiscloseRequest{Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	stream, err := tasks.WatchTaskSet(ctx(b), &batchv1.WatchTaskSetRequest{SetId: set.TaskSet.Id})
	if err != nil {
		b.Fatal(err)
	}
	for stream.Receive() {
		if stream.Msg().TaskSet.Counts.Finished == int64(b.N) {
			break
		}
	}
	stream.Close()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}
