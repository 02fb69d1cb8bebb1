package bench

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	"batchd/internal/promtext"
	"batchd/sched"
)

// The load of BenchmarkDispatchUnderLoad: loadClients clients of the
// users' mix (mix_test.go) as loadUsers users.
const (
	loadClients = 200
	loadUsers   = 20
	loadTasks   = 2000
)

// BenchmarkDispatchUnderLoad runs loadTasks requested `true` tasks on a
// server twice in each op: alone, then while loadClients API clients
// (each its own connection) call the users' mix (mix_test.go: list, get,
// and 10% each of 1-3-task discloses and requests of their own tasks) as
// loadUsers users. It reports both rates of the measured set and their
// ratio, the rate at which the copies of all users ended (the clients'
// own requested tasks run too) against the rate alone, the API's p50 and
// p99 for reads and writes while the tasks ran, the calls answered per
// second, how many calls were refused and why, and the worker leases
// that lapsed (from /metrics). One op is one such pair.
// The load reaches its steady state before the loaded run starts: every
// client has connected and had one call answered (200 connection setups
// at once are a different test), and a call counts when it starts and
// ends while the tasks run.
// Two kinds of client, on 64 local slots, and the saturating clients on
// 2 slots as well:
//
//   - users: each client waits a think time between its calls, drawn
//     from an exponential distribution with mean loadThink (people and
//     dashboards refreshing about once a second: about 200 calls a second
//     in all). The latencies are what such a client sees.
//
//   - saturating: no think time, each client calls again as soon as it
//     has its answer. This measures the most calls a second the server
//     answers beside the dispatch path; its latencies are set by Little's
//     law (clients / calls a second), not by the server's speed.
//
//     go test -run '^$' -bench DispatchUnderLoad -benchtime 3x -count 3 ./bench/
func BenchmarkDispatchUnderLoad(b *testing.B) {
	b.Run("users", func(b *testing.B) { benchUnderLoad(b, slots, loadThink) })
	b.Run("saturating", func(b *testing.B) { benchUnderLoad(b, slots, 0) })
	b.Run("saturating-slots=2", func(b *testing.B) { benchUnderLoad(b, 2, 0) })
}

// loadThink is the mean think time of BenchmarkDispatchUnderLoad/users.
const loadThink = time.Second

func benchUnderLoad(b *testing.B, nslots int, think time.Duration) {
	bs := serverWith(b, nslots)
	ctx := context.Background()
	users := mixUsers(b, bs, "load", loadUsers)
	var alone, loaded time.Duration
	var aloneCopies, loadedCopies float64
	var reads, writes []float64
	calls := 0
	refused := map[connect.Code]int{}
	lapses0 := scrape(b, bs, "batchd_lease_lapses_total")
	seed := uint64(0)
	for b.Loop() {
		c0 := scrape(b, bs, "batchd_copies_ended_total")
		alone += runTasks(b, bs.c, loadTasks)
		aloneCopies += scrape(b, bs, "batchd_copies_ended_total") - c0
		lctx, stop := context.WithCancel(ctx)
		seed++
		ld := startMix(lctx, bs, users, loadClients, seed, think)
		ld.warm.Wait()
		ld.measuring.Store(true)
		c1 := scrape(b, bs, "batchd_copies_ended_total")
		loaded += runTasks(b, bs.c, loadTasks)
		loadedCopies += scrape(b, bs, "batchd_copies_ended_total") - c1
		ld.measuring.Store(false)
		stop()
		ld.wg.Wait()
		reads, writes = append(reads, ld.reads...), append(writes, ld.writes...)
		calls += len(ld.reads) + len(ld.writes)
		for k, v := range ld.refused {
			refused[k] += v
		}
	}
	lapses := scrape(b, bs, "batchd_lease_lapses_total") - lapses0
	n := float64(b.N * loadTasks)
	rAlone, rLoaded := n/alone.Seconds(), n/loaded.Seconds()
	b.ReportMetric(rAlone, "alone-tasks/s")
	b.ReportMetric(rLoaded, "loaded-tasks/s")
	b.ReportMetric(rLoaded/rAlone, "ratio")
	b.ReportMetric((loadedCopies/loaded.Seconds())/(aloneCopies/alone.Seconds()), "all-copies-ratio")
	b.ReportMetric(quantile(reads, 0.5), "read-p50-ms")
	b.ReportMetric(quantile(reads, 0.99), "read-p99-ms")
	b.ReportMetric(quantile(writes, 0.5), "write-p50-ms")
	b.ReportMetric(quantile(writes, 0.99), "write-p99-ms")
	b.ReportMetric(float64(calls)/loaded.Seconds(), "api-calls/s")
	b.ReportMetric(lapses, "lease-lapses")
	for code, k := range refused {
		b.Logf("%d calls answered %v", k, code)
	}
}

// runTasks discloses n requested `true` tasks in one call and returns how
// long they took to finish.
func runTasks(b *testing.B, c *client.Client, n int) time.Duration {
	b.Helper()
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	start := time.Now()
	res, err := c.Disclose(context.Background(), client.DiscloseInput{Name: "measured", Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	waitSet(b, c, res.Set.ID)
	return time.Since(start)
}

// scrape returns the value of an unlabelled metric on the server's
// /metrics.
func scrape(b *testing.B, bs *benchServer, name string) float64 {
	b.Helper()
	v, ok := scrapeIf(b, bs, name)
	if !ok {
		b.Fatalf("no metric %s", name)
	}
	return v
}

// scrapeIf is scrape for a metric an older server may not have: ok is
// false when the server does not export it.
func scrapeIf(b *testing.B, bs *benchServer, name string) (v float64, ok bool) {
	b.Helper()
	m, err := promtext.Read(bs.url)
	if err != nil {
		b.Fatal(err)
	}
	v, ok = m[name]
	return v, ok
}
