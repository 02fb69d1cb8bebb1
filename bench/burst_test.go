package bench

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// BenchmarkWritesAfterBurst: do writes stay fast once a burst has passed?
// On a server with 2 local slots, quietClients closed-loop clients of the
// users' mix (mix_test.go) run for a phase, then burstClients for the
// burst, then the quiet clients again. It reports the writes' p50 and p99
// (Disclose and Request) of the quiet phases before and after, and the
// reads'. The burst leaves thousands of sets and requested, unfinished
// tasks behind (2 slots cannot keep up): whatever a write does per set or
// per queued task shows as a slower "after".
//
// The sizes are the environment's (defaults in brackets):
// BURST_CLIENTS [1000], BURST_SECONDS [60], QUIET_CLIENTS [10],
// QUIET_SECONDS [10].
//
//	go test -run '^$' -bench WritesAfterBurst -benchtime 1x -count 3 -timeout 30m ./bench/
func BenchmarkWritesAfterBurst(b *testing.B) {
	burstClients, burstFor := envInt("BURST_CLIENTS", 1000), time.Duration(envInt("BURST_SECONDS", 60))*time.Second
	quietClients, quietFor := envInt("QUIET_CLIENTS", 10), time.Duration(envInt("QUIET_SECONDS", 10))*time.Second
	for b.Loop() {
		data := b.TempDir()
		// No per-user caps: the burst's sets and tasks must pile up.
		bs, err := startServerIn(batchd(b), 2, data, "--max-open-sets", "-1", "--max-queued-tasks", "-1", "--log-level", "warn")
		if err != nil {
			b.Fatal(err)
		}
		users := mixUsers(b, bs, "burst", 20)
		quiet := func(seed uint64) *mixLoad {
			ctx, stop := context.WithCancel(context.Background())
			ml := startMix(ctx, bs, users, quietClients, seed, 0)
			ml.measure(quietFor)
			stop()
			ml.wg.Wait()
			return ml
		}
		before := quiet(1)
		ctx, stop := context.WithCancel(context.Background())
		burst := startMix(ctx, bs, users, burstClients, 2, 0)
		burst.warm.Wait()
		t0 := time.Now()
		time.Sleep(burstFor) // the burst runs meanwhile
		calls := burst.calls.Load()
		stop()
		burst.wg.Wait()
		b.ReportMetric(float64(calls)/time.Since(t0).Seconds(), "burst-calls/s")
		if n := envInt("BURST_SETS", 0); n > 0 {
			// n sets of two `sleep 60` tasks, one of them requested, from 32
			// clients: the burst's sets and queue without its dispatching.
			pileSets(b, bs, users, n)
		}
		open := scrape(b, bs, `batchd_queue_length{class="requested"}`)
		if p := os.Getenv("BURST_PAUSE_SECONDS"); p != "" {
			// Time to attach a profiler to the server (its pid is logged).
			b.Logf("server pid %d: after the burst, %.0f requested tasks queued", bs.pid, open)
			n, _ := strconv.Atoi(p)
			time.Sleep(time.Duration(n) * time.Second)
		}
		after := quiet(3)
		bs.stop()
		b.ReportMetric(open, "queued-after-burst")
		b.ReportMetric(quantile(before.writes, 0.5), "before-write-p50-ms")
		b.ReportMetric(quantile(before.writes, 0.99), "before-write-p99-ms")
		b.ReportMetric(quantile(after.writes, 0.5), "after-write-p50-ms")
		b.ReportMetric(quantile(after.writes, 0.99), "after-write-p99-ms")
		b.ReportMetric(quantile(before.reads, 0.5), "before-read-p50-ms")
		b.ReportMetric(quantile(after.reads, 0.5), "after-read-p50-ms")
		for code, k := range burst.refused {
			b.Logf("burst: %d calls answered %v", k, code)
		}
	}
}

// envInt is the integer in environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// pileSets discloses n sets of two `sleep 60` tasks and requests one task
// of each, from 32 clients at once.
func pileSets(b *testing.B, bs *benchServer, users []mixUser, n int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		u := users[i%len(users)]
		c := client.New(client.Config{Server: bs.url, HTTPClient: client.WithToken(&http.Client{}, u.token)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				res, err := c.Disclose(context.Background(), client.DiscloseInput{Name: "pile",
					Tasks: []sched.TaskSpec{{Argv: []string{"sleep", "60"}}, {Argv: []string{"sleep", "60"}}}})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := c.Request(context.Background(), res.Set.ID, []int32{0}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
