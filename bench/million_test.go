package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// millionSets × millionPerSet tasks are queued by BenchmarkMillionQueued.
const (
	millionSets   = 10
	millionPerSet = 100_000
)

// BenchmarkMillionQueued queues 10⁶ tasks (ten sets of 100,000 `true`
// tasks, every other set requested) on a server with no slots, so that
// they all stay queued, and reports:
//
//   - rss-bytes/task: the server's resident memory per queued task, over
//     the same server's before the first disclose (once it has settled:
//     the Go runtime returns the garbage of the discloses to the system
//     over a few seconds);
//   - restart-s: after a kill -9, the time from starting `batchd serve`
//     again on the same data directory until it answers with its state
//     loaded;
//   - restart-rss-bytes/task: the restarted server's resident memory per
//     queued task, over an empty server's, and restart-anon-bytes/task the
//     same for its anonymous memory alone (heap and stacks; the rest is
//     pages of the binary and of the database it has mapped).
//
// One op is one such cycle on a fresh data directory:
//
//	go test -run '^$' -bench MillionQueued -benchtime 1x -count 3 ./bench/
func BenchmarkMillionQueued(b *testing.B) {
	bin := batchd(b)
	var perTask, restart, restartPerTask, restartAnon []float64
	for b.Loop() {
		data := b.TempDir()
		s, err := startServerIn(bin, 0, data)
		if err != nil {
			b.Fatal(err)
		}
		empty := settledRSS(b, s.pid)
		emptyAnon := procStatus(b, s.pid, "RssAnon")
		total := 0
		for i := range millionSets {
			specs := make([]sched.TaskSpec, millionPerSet)
			for j := range specs {
				specs[j] = sched.TaskSpec{Argv: []string{"true"}}
			}
			res, err := s.c.Disclose(context.Background(), client.DiscloseInput{Name: fmt.Sprintf("million-%d", i), Tasks: specs, Request: i%2 == 1})
			if err != nil {
				s.kill()
				b.Fatal(err)
			}
			total += int(res.Count)
		}
		if total != millionSets*millionPerSet {
			b.Fatalf("queued %d tasks", total)
		}
		full := settledRSS(b, s.pid)
		perTask = append(perTask, float64(full-empty)/float64(total))
		s.kill()

		t0 := time.Now()
		s2, err := startServerIn(bin, 0, data)
		if err != nil {
			b.Fatal(err)
		}
		restart = append(restart, time.Since(t0).Seconds())
		cl, err := s2.c.GetCluster(context.Background())
		if err != nil || cl.Queues.Requested+cl.Queues.Disclosed != int64(total) {
			s2.kill()
			b.Fatalf("after the restart: queues %+v (%v), want %d tasks queued", cl.Queues, err, total)
		}
		restartPerTask = append(restartPerTask, float64(settledRSS(b, s2.pid)-empty)/float64(total))
		restartAnon = append(restartAnon, float64(procStatus(b, s2.pid, "RssAnon")-emptyAnon)/float64(total))
		s2.stop()
	}
	b.ReportMetric(quantile(perTask, 0.5), "rss-bytes/task")
	b.ReportMetric(quantile(restart, 0.5), "restart-s")
	b.ReportMetric(quantile(restartPerTask, 0.5), "restart-rss-bytes/task")
	b.ReportMetric(quantile(restartAnon, 0.5), "restart-anon-bytes/task")
}

// settledRSS returns process pid's resident set size in bytes once it has
// changed by less than 1% over two seconds, after 20 s at least (the
// server looks for freed memory to return every 15 s) and 50 s at most.
func settledRSS(b *testing.B, pid int) int64 {
	b.Helper()
	time.Sleep(20 * time.Second) // another process: no clock to inject
	prev := rss(b, pid)
	for range 15 {
		time.Sleep(2 * time.Second) // another process: no clock to inject
		cur := rss(b, pid)
		if d := cur - prev; d < prev/100 && -d < prev/100 {
			return cur
		}
		prev = cur
	}
	return prev
}

// rss is VmRSS of /proc/PID/status in bytes.
func rss(b *testing.B, pid int) int64 { return procStatus(b, pid, "VmRSS") }

// procStatus is a field of /proc/PID/status given in kB, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s", field)
	return 0
}
