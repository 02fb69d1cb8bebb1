package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// BenchmarkScaling measures one server's control plane with many remote
// slots (docs/scaling.md): a `batchd serve --slots 0` and W `batchd
// worker` processes of S slots each, all on this machine over loopback.
// One op is one requested task `true`; b.N of them are disclosed in one
// call and the benchmark waits until all are finished, then checks one
// bill line per task.
//
// TEST-ONLY EXECUTOR: the workers run with the hidden flag
// --bench-no-exec, so a copy ends at once without a fork (a `true` that
// costs nothing): what is measured is the server, the store and the
// worker protocol, not fork/exec. The "fork" case runs one worker that
// does fork, for comparison.
//
// It reports tasks/s; the store's write transactions per second and tasks
// per write transaction (group commit); writer-busy, the fraction of the
// wall time the single SQLite writer spent inside write transactions (1
// is saturated) and that time per task (writer-ms/task: 1000 divided by
// it is the most tasks/s this writer could take); the server's CPU per task (its children excluded); and
// the 1-minute load average when the case started.
//
// BATCHD_BENCH_VARIANTS (comma-separated, default "base") adds ablations,
// each run right after the base case it changes, so that they alternate:
// "tmpfs" puts the server's data directory in /dev/shm (the database in
// memory, no disk under it); "sync-off" runs the server with the
// benchmark-only flag --bench-synchronous-off (SQLite synchronous=OFF).
func BenchmarkScaling(b *testing.B) {
	cases := []struct {
		workers, slots int
		fork           bool
	}{
		{1, 16, false}, {4, 64, false}, {16, 64, false}, {32, 64, false}, {64, 64, false},
		{1, 64, true},
	}
	variants := strings.Split(os.Getenv("BATCHD_BENCH_VARIANTS"), ",")
	if variants[0] == "" {
		variants = []string{"base"}
	}
	for _, c := range cases {
		for _, v := range variants {
			name := fmt.Sprintf("%s/noexec/workers=%d/slots=%d", v, c.workers, c.workers*c.slots)
			if c.fork {
				name = fmt.Sprintf("%s/fork/workers=%d/slots=%d", v, c.workers, c.workers*c.slots)
			}
			b.Run(name, func(b *testing.B) { benchScaling(b, v, c.workers, c.slots, !c.fork) })
		}
	}
}

func benchScaling(b *testing.B, variant string, workers, slots int, noExec bool) {
	bin := batchd(b)
	data := b.TempDir()
	var extra []string
	switch variant {
	case "base":
	case "tmpfs":
		dir, err := os.MkdirTemp("/dev/shm", "batchd-bench-")
		if err != nil {
			b.Skipf("no tmpfs: %v", err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		data = dir
	case "sync-off":
		extra = append(extra, "--bench-synchronous-off")
	default:
		b.Fatalf("unknown variant %q (base, tmpfs, sync-off)", variant)
	}
	bs, err := startServerIn(bin, 0, data, extra...)
	if err != nil {
		b.Fatal(err)
	}
	defer bs.stop()
	out, err := exec.Command(bin, "user", "add", "--data", data, "--worker", "bench-workers").Output()
	if err != nil {
		b.Fatalf("batchd user add --worker: %v", err)
	}
	token := strings.TrimSpace(string(out))
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for i := range workers {
		args := []string{"worker", "--server", bs.url, "--name", fmt.Sprintf("w%03d", i), "--slots", strconv.Itoa(slots),
			"--state-dir", filepath.Join(data, fmt.Sprintf("w%03d", i)), "--drain", "1s"}
		if noExec {
			args = append(args, "--bench-no-exec")
		}
		cmd := exec.Command(bin, args...)
		// The token in the environment, never on the command line.
		cmd.Env = append(os.Environ(), "BATCH_WORKER_TOKEN="+token)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		cl, err := bs.c.GetCluster(ctx)
		if err == nil && cl.Slots >= int32(workers*slots) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d slots not up after 3 minutes (last error %v)", workers*slots, err)
		}
		time.Sleep(100 * time.Millisecond) // other processes: no clock to inject
	}
	specs := make([]sched.TaskSpec, b.N)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	load := loadAvg1(b)
	b.ResetTimer()
	tx0, busy0 := scrape(b, bs, "batchd_store_write_transactions_total"), scrape(b, bs, "batchd_store_write_busy_seconds_total")
	stopPerf := perfRecord(b, fmt.Sprintf("%s-%d", variant, workers*slots), bs.pid, procs)
	cpu0, wcpu0, self0 := cpuSeconds(b, bs.pid), workersCPU(b, procs), selfCPU()
	start := time.Now()
	res, err := bs.c.Disclose(ctx, client.DiscloseInput{Name: "scaling", Tasks: specs, Request: true})
	if err != nil {
		b.Fatal(err)
	}
	pollSet(b, bs.c, res.Set.ID)
	elapsed := time.Since(start).Seconds()
	cpu := cpuSeconds(b, bs.pid) - cpu0
	wcpu, self := workersCPU(b, procs)-wcpu0, selfCPU()-self0
	stopPerf()
	tx, busy := scrape(b, bs, "batchd_store_write_transactions_total")-tx0, scrape(b, bs, "batchd_store_write_busy_seconds_total")-busy0
	b.StopTimer()
	bill, err := bs.c.GetBill(ctx, client.BillInput{Set: res.Set.ID})
	if err != nil {
		b.Fatal(err)
	}
	if got, want := bill.Totals.Lines, int64(b.N); got != want {
		b.Fatalf("bill has %d lines for %d tasks", got, want)
	}
	b.ReportMetric(float64(b.N)/elapsed, "tasks/s")
	b.ReportMetric(tx/elapsed, "write-tx/s")
	b.ReportMetric(float64(b.N)/tx, "tasks/write-tx")
	b.ReportMetric(busy/elapsed, "writer-busy")
	b.ReportMetric(busy*1000/float64(b.N), "writer-ms/task")
	b.ReportMetric(cpu*1000/float64(b.N), "server-cpu-ms/task")
	b.ReportMetric(cpu/elapsed, "server-cpus")
	b.ReportMetric(wcpu*1000/float64(b.N), "worker-cpu-ms/task")
	b.ReportMetric(self*1000/float64(b.N), "client-cpu-ms/task")
	b.ReportMetric(load, "load1")
}

// loadAvg1 is the machine's 1-minute load average.
func loadAvg1(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// workersCPU is the CPU time (user + system) of the worker processes so
// far, all of them together.
func workersCPU(b *testing.B, procs []*exec.Cmd) float64 {
	b.Helper()
	var t float64
	for _, p := range procs {
		t += cpuSeconds(b, p.Process.Pid)
	}
	return t
}

// perfRecord, when BATCHD_BENCH_PERF names a path prefix, records the
// server and the workers with `perf record -g` (two files,
// PREFIX-NAME-server.data and PREFIX-NAME-workers.data) until the
// function it returns is called; otherwise it does nothing.
func perfRecord(b *testing.B, name string, server int, procs []*exec.Cmd) func() {
	b.Helper()
	prefix := os.Getenv("BATCHD_BENCH_PERF")
	if prefix == "" {
		return func() {}
	}
	workers := make([]string, len(procs))
	for i, p := range procs {
		workers[i] = strconv.Itoa(p.Process.Pid)
	}
	var cmds []*exec.Cmd
	for _, r := range []struct{ who, pids string }{{"server", strconv.Itoa(server)}, {"workers", strings.Join(workers, ",")}} {
		cmd := exec.Command("perf", "record", "-g", "-F", "499", "-o", fmt.Sprintf("%s-%s-%s.data", prefix, name, r.who), "-p", r.pids)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatalf("perf record: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(500 * time.Millisecond) // perf attaches; no event to wait on
	return func() {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGINT)
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	}
}

// pollSet waits until every task of the set is finished, reading the set's
// counts every 10 ms. A Watch stream, which reads every task that changed,
// was 15% of the server's CPU at 1,024 slots: the measuring tool's cost,
// not the control plane's. Polling ends at most 10 ms late, 0.5% of a
// 20,000-task case at 10,000 tasks/s.
func pollSet(b *testing.B, c *client.Client, set sched.SetID) {
	b.Helper()
	for {
		p, err := c.GetTaskSet(context.Background(), client.GetTaskSetInput{Set: set, PageSize: 1})
		if err != nil {
			b.Fatal(err)
		}
		if n := p.Set.Counts; n.Finished+n.Canceled >= n.Total {
			return
		}
		time.Sleep(10 * time.Millisecond) // other processes: no clock to inject
	}
}
