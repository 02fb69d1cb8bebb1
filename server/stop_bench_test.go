package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// BenchmarkStopRule times a stop rule ending a 10,000-task set: 64 copies
// run on a worker that speaks the wire protocol over loopback, one reports
// a matching result, and the benchmark measures the time from sending that
// report to its answer (the store's transaction, which cancels the rest,
// committed), to the last of the 63 kills reaching the worker, the CPU
// time the process (server and worker side) spent in between, which a
// loaded machine does not stretch as it stretches wall time, and the write
// transactions the server committed in between:
//
//	go test -run '^$' -bench StopRule -benchtime 3x ./server
func BenchmarkStopRule(b *testing.B) {
	const n, slots = 10_000, 64
	tasks := make([]*batchv1.TaskSpec, n)
	for i := range tasks {
		tasks[i] = &batchv1.TaskSpec{Argv: []string{"sh", "-c", "echo task"}}
	}
	var answer, killed, cpu time.Duration
	var txs int64
	for b.Loop() {
		b.StopTimer()
		bu := setup(b, options{})
		if _, err := bu.workers.Register(ctx(b), &batchv1.RegisterRequest{Isolation: "namespaces", Name: "w", Slots: slots, CanSuspend: true, Hostname: "bench"}); err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(context.Background())
		stream, err := bu.workers.Assignments(sctx, &batchv1.AssignmentsRequest{WorkerId: "w"})
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan *batchv1.AssignmentsResponse, 2*slots)
		go func() {
			for stream.Receive() {
				got <- stream.Msg()
			}
		}()
		next := func(want string) *batchv1.AssignmentsResponse {
			for {
				select {
				case m := <-got:
					if (want == "start" && m.GetStart() != nil) || (want == "kill" && m.GetKill() != 0) {
						return m
					}
				case <-time.After(time.Minute):
					b.Fatalf("no %s in a minute", want)
				}
			}
		}
		set, err := bu.tasks.Disclose(ctx(b), &batchv1.DiscloseRequest{Tasks: tasks, Stop: &batchv1.StopRule{OnOutput: "^found"}})
		if err != nil {
			b.Fatal(err)
		}
		bu.srv.DispatchOnce()
		first := next("start").GetStart()
		for range slots - 1 {
			next("start")
		}
		before := writeTransactions(b, bu.http.URL)
		b.StartTimer()
		c0 := processCPU(b)
		t0 := time.Now()
		if _, err := bu.workers.ReportFinished(ctx(b), &batchv1.ReportFinishedRequest{WorkerId: "w", CopyId: first.CopyId, Stdout: []byte("found 7\n"), RunSeconds: 1}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for range slots - 1 {
			next("kill")
		}
		t2 := time.Now()
		cpu += processCPU(b) - c0
		b.StopTimer()
		txs += writeTransactions(b, bu.http.URL) - before
		answer, killed = answer+t1.Sub(t0), killed+t2.Sub(t0)
		got2, err := bu.tasks.GetTaskSet(ctx(b), &batchv1.GetTaskSetRequest{SetId: set.TaskSet.Id})
		if err != nil || got2.TaskSet.Counts.Canceled != n-1 || got2.TaskSet.Stopped.GetCanceled() != n-1 {
			b.Fatalf("after the stop: %v, %v", got2.GetTaskSet(), err)
		}
		cancel()
		bu.close()
		b.StartTimer()
	}
	b.ReportMetric(answer.Seconds()*1e3/float64(b.N), "answer-ms")
	b.ReportMetric(killed.Seconds()*1e3/float64(b.N), "kills-ms")
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms")
	b.ReportMetric(float64(txs)/float64(b.N), "write-tx")
}

// writeTransactions reads the server's count of committed write
// transactions from /metrics.
func writeTransactions(b *testing.B, url string) int64 {
	res, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "batchd_store_write_transactions_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return int64(f)
		}
	}
	b.Fatal(fmt.Errorf("no batchd_store_write_transactions_total in /metrics"))
	return 0
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
