package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"batchd/client"
	"batchd/internal/forkbase"
	"batchd/sched"
)

// slots is the number of worker slots of the main benchmarked server.
const slots = 64

var (
	buildOnce sync.Once
	batchdBin string
	buildErr  error
)

// batchd builds the batchd binary once per run, or takes the one
// BATCHD_BENCH_BIN names (to compare two builds in one run, alternately).
func batchd(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("BATCHD_BENCH_BIN"); p != "" {
			batchdBin = p
			return
		}
		dir, err := os.MkdirTemp("", "batchd-bench-")
		if err != nil {
			buildErr = err
			return
		}
		batchdBin = filepath.Join(dir, "batchd")
		if out, err := exec.Command("go", "build", "-o", batchdBin, "batchd/cmd/batchd").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build batchd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return batchdBin
}

// benchServer is a `batchd serve` child process on a loopback port.
type benchServer struct {
	c     *client.Client
	url   string
	token string // the admin's
	pid   int
	stop  func()
	kill  func() // SIGKILL, and wait for the process to end
}

// The servers are shared by the benchmarks (the framework calls each one
// several times with growing b.N), one per slot count, and stopped by
// TestMain.
var (
	srvMu   sync.Mutex
	servers = map[int]*benchServer{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range servers {
		s.stop()
	}
	if batchdBin != "" && os.Getenv("BATCHD_BENCH_BIN") == "" { // only the directory it made
		os.RemoveAll(filepath.Dir(batchdBin))
	}
	os.Exit(code)
}

// server returns a client for the shared `batchd serve` with 64 local slots.
func server(b *testing.B) *client.Client { return serverWith(b, slots).c }

// serverWith returns the shared `batchd serve` with n local slots on a
// free loopback port, started on first use and ready once all slots are
// registered.
func serverWith(b *testing.B, n int) *benchServer {
	b.Helper()
	bin := batchd(b)
	srvMu.Lock()
	defer srvMu.Unlock()
	if s := servers[n]; s != nil {
		return s
	}
	s, err := startServer(bin, n)
	if err != nil {
		b.Fatal(err)
	}
	servers[n] = s
	return s
}

func startServer(bin string, n int) (*benchServer, error) {
	data, err := os.MkdirTemp("", "batchd-bench-data-")
	if err != nil {
		return nil, err
	}
	s, err := startServerIn(bin, n, data)
	if err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	stop := s.stop
	s.stop = func() { stop(); os.RemoveAll(data) }
	return s, nil
}

// startServerIn starts `batchd serve` with n slots on the data directory
// data (kept when it stops), with the extra flags, and waits until it
// answers with its slots.
func startServerIn(bin string, n int, data string, extra ...string) (*benchServer, error) {
	// Port 0: the server picks a free port and prints it (no port closed
	// and then reused by guess).
	// --rate -1: one benchmark calls as one user faster than the default
	// per-user cap (1,000 calls a second), which BenchmarkRequestToStart
	// reached once a request's way to its start took 1.3 ms; the cap is
	// an abuse limit, tested in server/ledger_test.go, not the dispatch
	// path measured here.
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", data, "--slots", strconv.Itoa(n), "--drain", "0s", "--rate", "-1")
	if p := os.Getenv("BATCHD_BENCH_CPU_PROFILE"); p != "" {
		// BATCHD_BENCH_CPU_PROFILE=/tmp/srv go test -bench ...: a CPU
		// profile of each server, /tmp/srv-SLOTS.pprof.
		cmd.Args = append(cmd.Args, "--cpu-profile", fmt.Sprintf("%s-%d.pprof", p, n), "--alloc-profile", fmt.Sprintf("%s-%d.allocs", p, n))
	}
	// BATCHD_BENCH_SERVE_ARGS="--api-concurrency 4": more flags for the
	// servers, to compare settings.
	cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("BATCHD_BENCH_SERVE_ARGS"))...)
	cmd.Args = append(cmd.Args, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // the server dies with the benchmark
	out := &strings.Builder{}
	var outMu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { outMu.Lock(); defer outMu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(time.Minute)
	addr := ""
	for {
		if addr == "" {
			outMu.Lock()
			for _, line := range strings.Split(out.String(), "\n") {
				if rest, ok := strings.CutPrefix(line, "batchd serving on http://"); ok {
					addr = strings.Fields(rest)[0]
				}
			}
			outMu.Unlock()
		}
		// The server writes its admin token on first start.
		token, _, err := client.ResolveToken(client.TokenSource{DataDir: data, ConfigFile: filepath.Join(data, "no-config"),
			Env: func(string) (string, bool) { return "", false }})
		c := client.New(client.Config{Server: "http://" + addr, HTTPClient: client.WithToken(&http.Client{}, token)})
		cl, err2 := c.GetCluster(context.Background())
		if err == nil {
			err = err2
		}
		if err == nil && cl.Slots >= int32(n) {
			kill := func() { _ = cmd.Process.Kill(); <-done }
			return &benchServer{c: c, url: "http://" + addr, token: token, pid: cmd.Process.Pid, stop: stop, kill: kill}, nil
		}
		if time.Now().After(deadline) {
			stop()
			outMu.Lock()
			defer outMu.Unlock()
			return nil, fmt.Errorf("server not ready with %d slots after a minute (last error %v):\n%s", n, err, out.String())
		}
		time.Sleep(50 * time.Millisecond) // another process: no clock to inject
	}
}

// cpuSeconds is the CPU time (user + system) of process pid so far, its
// children excluded: fields 14 and 15 of /proc/PID/stat.
func cpuSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitSet waits until every task of the set is finished.
func waitSet(b *testing.B, c *client.Client, set sched.SetID) {
	b.Helper()
	// As batchctl request waits: the set's counts only; BATCHD_BENCH_WATCH=full
	// watches every task, as batchctl watch and the web page do.
	in := client.WatchInput{Set: set, SummaryOnly: os.Getenv("BATCHD_BENCH_WATCH") != "full"}
	err := c.WatchTasks(context.Background(), in, func(u client.WatchUpdate) error {
		if u.Set.Counts.Finished+u.Set.Counts.Canceled >= u.Set.Counts.Total {
			return client.ErrStopWatch
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// selfCPU is this process's CPU time (user + system), its children
// excluded.
func selfCPU() float64 { return forkbase.SelfCPU() }

// forkExecRate runs n copies of `true` on par goroutines and returns
// tasks per second, the baseline for the pipeline, and the CPU seconds
// this process spent per copy (forkbase.Rate, the baseline of
// worker.BenchmarkCopies too).
func forkExecRate(b *testing.B, n, par int) (rate, parentCPU float64) {
	b.Helper()
	rate, parentCPU, err := forkbase.Rate(n, par)
	if err != nil {
		b.Error(err)
	}
	return rate, parentCPU
}

// BenchmarkPipeline measures tasks per second through disclose → dispatch →
// run `true` → finish → bill, with 64 slots, 16, and 2 (one per core of
// the development machine): one op is one task. b.N tasks are disclosed (and
// requested) in one call, the benchmark waits until all are finished and
// checks that each has exactly one bill line. It reports tasks/s, the same
// rate for plain fork/exec of `true` on as many goroutines as slots
// (baseline-tasks/s), their ratio, the server's CPU time per task with the
// tasks' own CPU excluded (server-cpu-ms/task, from /proc/PID/stat), the
// CPU the baseline's own process spent per fork/exec/wait
// (fork-parent-cpu-ms/task) and the difference (bookkeeping-cpu-ms/task).
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{slots, 16, 2} {
		b.Run(fmt.Sprintf("slots=%d", n), func(b *testing.B) { benchPipeline(b, n) })
	}
}

func benchPipeline(b *testing.B, n int) {
	bs := serverWith(b, n)
	c := bs.c
	ctx := context.Background()
	specs := make([]sched.TaskSpec, b.N)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	b.ResetTimer()
	mallocs0, bytes0 := scrape(b, bs, "go_memstats_mallocs_total"), scrape(b, bs, "go_memstats_alloc_bytes_total")
	ended0 := scrape(b, bs, "batchd_copies_ended_total")
	commits0, haveCommits := scrapeIf(b, bs, "batchd_finish_commits_total")
	held0, haveHeld := scrapeIf(b, bs, "batchd_finish_commits_held_total")
	mem0, haveMem := scrapeIf(b, bs, "batchd_finish_commits_from_memory_total")
	stale0, _ := scrapeIf(b, bs, "batchd_finish_memory_stale_total")
	cpu0 := cpuSeconds(b, bs.pid)
	start := time.Now()
	res, err := c.Disclose(ctx, client.DiscloseInput{Name: "bench", Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	waitSet(b, c, res.Set.ID)
	bill, err := c.GetBill(ctx, client.BillInput{Set: res.Set.ID})
	elapsed := time.Since(start)
	cpu := cpuSeconds(b, bs.pid) - cpu0
	b.StopTimer()
	// What the server allocated per task (the watch above included): the
	// garbage its collector has to deal with, counted exactly whatever the
	// machine's load.
	mallocs := scrape(b, bs, "go_memstats_mallocs_total") - mallocs0
	allocBytes := scrape(b, bs, "go_memstats_alloc_bytes_total") - bytes0
	ended := scrape(b, bs, "batchd_copies_ended_total") - ended0
	commits, _ := scrapeIf(b, bs, "batchd_finish_commits_total")
	commits -= commits0
	held, _ := scrapeIf(b, bs, "batchd_finish_commits_held_total")
	held -= held0
	mem, _ := scrapeIf(b, bs, "batchd_finish_commits_from_memory_total")
	mem -= mem0
	stale, _ := scrapeIf(b, bs, "batchd_finish_memory_stale_total")
	stale -= stale0
	if err != nil {
		b.Fatal(err)
	}
	if got, want := bill.Totals.Lines, int64(b.N); got != want {
		b.Fatalf("bill has %d lines for %d tasks", got, want)
	}
	rate := float64(b.N) / elapsed.Seconds()
	base, parent := forkExecRate(b, min(b.N, 2000), n)
	b.ReportMetric(rate, "tasks/s")
	b.ReportMetric(base, "baseline-tasks/s")
	b.ReportMetric(rate/base, "ratio")
	b.ReportMetric(cpu*1000/float64(b.N), "server-cpu-ms/task")
	// The part of it that is not the parent's side of the fork: what
	// batchd's own bookkeeping costs per task.
	b.ReportMetric(parent*1000, "fork-parent-cpu-ms/task")
	b.ReportMetric((cpu/float64(b.N)-parent)*1000, "bookkeeping-cpu-ms/task")
	b.ReportMetric(mallocs/float64(b.N), "server-allocs/task")
	b.ReportMetric(allocBytes/float64(b.N), "server-alloc-bytes/task")
	if haveCommits && commits > 0 {
		// Ends per group commit of ends: how well the finishes gather.
		b.ReportMetric(ended/commits, "ends/commit")
		if haveHeld {
			// The share of them held back under load for more ends.
			b.ReportMetric(held/commits, "held/commit")
		}
		if haveMem {
			// The share written from the server's memory of the copies,
			// and of those rolled back for a stale memory and read again.
			b.ReportMetric(mem/commits, "memory/commit")
			b.ReportMetric(stale/commits, "stale/commit")
		}
	}
}

// BenchmarkRequestToStart measures, on the server with 64 slots, the time
// from sending a request to the start of its copy: one op is one task
// `date +%s%N`, disclosed and requested in one call; the task prints the
// clock when it runs. It reports the median and p99 in milliseconds, the
// median of the same measure for a plain local fork/exec of `date`
// (baseline-median-ms), and the ratio of the medians.
//
// idle: nothing else runs. busy: every slot runs a disclosed `sleep`, so
// each request takes its slot by suspending one (preemption); it also
// reports the idle median measured in the same run (idle-median-ms) and
// the difference (over-idle-ms).
func BenchmarkRequestToStart(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		c := server(b)
		lat := requestToStart(b, c, b.N)
		b.StopTimer()
		reportLatency(b, lat)
	})
	b.Run("busy", func(b *testing.B) {
		c := server(b)
		ctx := context.Background()
		b.StopTimer()
		idle := requestToStart(b, c, 50)
		fill := make([]sched.TaskSpec, slots)
		for i := range fill {
			fill[i] = sched.TaskSpec{Argv: []string{"sleep", "3600"}, NoSpeculation: true}
		}
		res, err := c.Disclose(ctx, client.DiscloseInput{Name: "fill", Tasks: fill})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := c.CancelAll(ctx, res.Set.ID); err != nil {
				b.Error(err)
			}
		}()
		for {
			cl, err := c.GetCluster(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if cl.BusySlots >= slots {
				break
			}
			time.Sleep(20 * time.Millisecond) // another process: no clock to inject
		}
		b.StartTimer()
		lat := requestToStart(b, c, b.N)
		b.StopTimer()
		reportLatency(b, lat)
		b.ReportMetric(quantile(idle, 0.5), "idle-median-ms")
		b.ReportMetric(quantile(lat, 0.5)-quantile(idle, 0.5), "over-idle-ms")
	})
}

// requestToStart discloses and requests n one-task sets of `date`, one
// after the other, and returns each one's milliseconds from the call to
// the task's start.
func requestToStart(b *testing.B, c *client.Client, n int) []float64 {
	b.Helper()
	ctx := context.Background()
	spec := sched.TaskSpec{Argv: []string{"date", "+%s%N"}, NoSpeculation: true}
	lat := make([]float64, 0, n)
	for range n {
		t0 := time.Now()
		res, err := c.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{spec}, Request: true})
		if err != nil {
			b.Fatal(err)
		}
		waitSet(b, c, res.Set.ID)
		out, err := c.GetOutput(ctx, sched.TaskRef{Set: res.Set.ID, Index: 0})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, sinceStamp(b, t0, out.Stdout))
	}
	return lat
}

// reportLatency reports lat's median and p99 beside the baseline, a plain
// fork/exec of `date` measured now.
func reportLatency(b *testing.B, lat []float64) {
	b.Helper()
	base := make([]float64, 0, 50)
	for range 50 {
		t0 := time.Now()
		out, err := exec.Command("date", "+%s%N").Output()
		if err != nil {
			b.Fatal(err)
		}
		base = append(base, sinceStamp(b, t0, out))
	}
	med, bmed := quantile(lat, 0.5), quantile(base, 0.5)
	b.ReportMetric(med, "median-ms")
	b.ReportMetric(quantile(lat, 0.99), "p99-ms")
	b.ReportMetric(bmed, "baseline-median-ms")
	b.ReportMetric(med/bmed, "ratio")
	b.ReportMetric(quantile(lat, 0.99)/bmed, "p99-ratio")
}

// sinceStamp returns milliseconds from t0 to the nanosecond Unix time that
// `date +%s%N` printed.
func sinceStamp(b *testing.B, t0 time.Time, out []byte) float64 {
	b.Helper()
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("date printed %q: %v", out, err)
	}
	return float64(ns-t0.UnixNano()) / 1e6
}

// quantile returns the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
