package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
	"batchd/sched"
)

// Load mix of BenchmarkDispatchUnderLoad: 40% ListTaskSets, 40% GetTaskSet,
// 10% Disclose, 10% Request, spread over loadUsers users.
const (
	loadClients = 200
	loadUsers   = 20
	loadTasks   = 2000
)

// BenchmarkDispatchUnderLoad runs loadTasks requested `true` tasks on the
// 64-slot server twice in each op: alone, then while loadClients API
// clients (each its own connection) call the mix above as loadUsers users.
// It reports both rates and their ratio (the dispatch path must not
// starve), the API's p50 and p99 for reads and writes while the tasks ran,
// the calls answered per second, how many calls were refused and why, and
// the worker leases that lapsed (from /metrics). One op is one such pair.
// The load reaches its steady state before the loaded run starts: every
// client has connected and had one call answered (200 connection setups
// at once are a different test), and a call counts when it starts and
// ends while the tasks run.
// Two kinds of client:
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
	b.Run("users", func(b *testing.B) { benchUnderLoad(b, loadThink) })
	b.Run("saturating", func(b *testing.B) { benchUnderLoad(b, 0) })
}

// loadThink is the mean think time of BenchmarkDispatchUnderLoad/users.
const loadThink = time.Second

func benchUnderLoad(b *testing.B, think time.Duration) {
	bs := serverWith(b, slots)
	ctx := context.Background()
	users := loadUsersFor(b, bs)
	var alone, loaded time.Duration
	var reads, writes []float64
	refused := map[connect.Code]int{}
	lapses0 := scrape(b, bs, "batchd_lease_lapses_total")
	for b.Loop() {
		alone += runTasks(b, bs.c, loadTasks)
		lctx, stop := context.WithCancel(ctx)
		ld := startLoad(lctx, bs, users, think)
		ld.warmWG.Wait()
		ld.measuring.Store(true)
		loaded += runTasks(b, bs.c, loadTasks)
		ld.measuring.Store(false)
		stop()
		r, w, ref := ld.wait()
		reads, writes = append(reads, r...), append(writes, w...)
		for k, v := range ref {
			refused[k] += v
		}
	}
	lapses := scrape(b, bs, "batchd_lease_lapses_total") - lapses0
	n := float64(b.N * loadTasks)
	rAlone, rLoaded := n/alone.Seconds(), n/loaded.Seconds()
	b.ReportMetric(rAlone, "alone-tasks/s")
	b.ReportMetric(rLoaded, "loaded-tasks/s")
	b.ReportMetric(rLoaded/rAlone, "ratio")
	b.ReportMetric(quantile(reads, 0.5), "read-p50-ms")
	b.ReportMetric(quantile(reads, 0.99), "read-p99-ms")
	b.ReportMetric(quantile(writes, 0.5), "write-p50-ms")
	b.ReportMetric(quantile(writes, 0.99), "write-p99-ms")
	b.ReportMetric(float64(len(reads)+len(writes))/loaded.Seconds(), "api-calls/s")
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

// loadUser is one of the users the load calls as, with a set of its own
// for GetTaskSet and Request.
type loadUser struct {
	token string
	set   int64
}

var (
	loadUsersOnce sync.Once
	loadUserList  []loadUser
)

// loadUsersFor creates the load's users on the server (once per run).
func loadUsersFor(b *testing.B, bs *benchServer) []loadUser {
	b.Helper()
	loadUsersOnce.Do(func() {
		admin := batchv1connect.NewUserServiceClient(client.WithToken(&http.Client{}, bs.token), bs.url)
		for i := range loadUsers {
			u, err := admin.AddUser(context.Background(), &batchv1.AddUserRequest{Name: fmt.Sprintf("load%02d", i), Role: "user"})
			if err != nil {
				b.Fatal(err)
			}
			c := client.New(client.Config{Server: bs.url, HTTPClient: client.WithToken(&http.Client{}, u.Token)})
			res, err := c.Disclose(context.Background(), client.DiscloseInput{Name: "load",
				Tasks: []sched.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}}}})
			if err != nil {
				b.Fatal(err)
			}
			loadUserList = append(loadUserList, loadUser{token: u.Token, set: int64(res.Set.ID)})
		}
	})
	return loadUserList
}

// load is a running API load.
type load struct {
	wg            sync.WaitGroup
	mu            sync.Mutex
	reads, writes []float64
	refused       map[connect.Code]int
	// warmWG is done once every client has had its first call answered;
	// calls are counted while measuring.
	warmWG    sync.WaitGroup
	measuring atomic.Bool
}

// startLoad starts loadClients clients, each with its own connection,
// until ctx is done; each waits an exponential think time with mean think
// between calls (none when think is 0).
func startLoad(ctx context.Context, bs *benchServer, users []loadUser, think time.Duration) *load {
	ld := &load{refused: map[connect.Code]int{}}
	for i := range loadClients {
		u := users[i%len(users)]
		hc := client.WithToken(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}, u.token)
		sets := batchv1connect.NewTaskSetServiceClient(hc, bs.url)
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		ld.wg.Add(1)
		ld.warmWG.Add(1)
		go func() {
			defer ld.wg.Done()
			// The first call connects; it is not counted.
			_, _ = sets.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{PageSize: 50})
			ld.warmWG.Done()
			for ctx.Err() == nil {
				if think > 0 {
					t := time.NewTimer(time.Duration(rng.ExpFloat64() * float64(think)))
					select {
					case <-ctx.Done():
						t.Stop()
						return
					case <-t.C:
					}
				}
				p := rng.IntN(10)
				counted := ld.measuring.Load()
				t0 := time.Now()
				var err error
				write := false
				switch {
				case p < 4:
					_, err = sets.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{PageSize: 50})
				case p < 8:
					_, err = sets.GetTaskSet(ctx, &batchv1.GetTaskSetRequest{SetId: u.set, PageSize: 50})
				case p < 9:
					write = true
					_, err = sets.Disclose(ctx, &batchv1.DiscloseRequest{SetId: u.set,
						Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}}})
				default:
					write = true
					_, err = sets.Request(ctx, &batchv1.RequestRequest{SetId: u.set, Indexes: []int32{int32(rng.IntN(2))}})
				}
				if ctx.Err() != nil {
					return // the load stopped during the call: not a sample
				}
				if !counted || !ld.measuring.Load() {
					continue // started before or ended after the tasks ran
				}
				ms := float64(time.Since(t0).Microseconds()) / 1000
				ld.mu.Lock()
				if err != nil {
					ld.refused[connect.CodeOf(err)]++
				} else if write {
					ld.writes = append(ld.writes, ms)
				} else {
					ld.reads = append(ld.reads, ms)
				}
				ld.mu.Unlock()
			}
		}()
	}
	return ld
}

// wait waits for the clients to stop and returns the read and write
// latencies in milliseconds and the refusals by code.
func (ld *load) wait() ([]float64, []float64, map[connect.Code]int) {
	ld.wg.Wait()
	return ld.reads, ld.writes, ld.refused
}

// scrape returns the value of an unlabelled metric on the server's
// /metrics.
func scrape(b *testing.B, bs *benchServer, name string) float64 {
	b.Helper()
	resp, err := http.Get(bs.url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatalf("no metric %s", name)
	return 0
}
