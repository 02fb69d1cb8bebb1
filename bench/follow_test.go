package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// BenchmarkFollowFirstLine measures how long a running task's first line
// takes from the task's write to a follower (client.FollowOutput, what
// `batchctl output --follow` runs): the task prints `date +%s%N` once its
// follower is on (it sleeps 0.2 s first), and the follower compares the
// stamp with its clock on receipt. One op = one task. `idle` on an idle
// server; `busy` while a stream of requested `true` tasks runs through
// the other slots (the pipeline).
func BenchmarkFollowFirstLine(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		reportFollow(b, followFirstLines(b, server(b), b.N))
	})
	b.Run("busy", func(b *testing.B) {
		c := server(b)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var ran int
		wg.Add(1)
		go func() {
			defer wg.Done()
			specs := make([]sched.TaskSpec, 500)
			for i := range specs {
				specs[i] = sched.TaskSpec{Argv: []string{"true"}}
			}
			for ctx.Err() == nil {
				res, err := c.Disclose(ctx, client.DiscloseInput{Name: "pipeline", Tasks: specs, Request: true})
				if err != nil {
					return
				}
				waitSetCtx(ctx, c, res.Set.ID)
				ran += len(specs)
			}
		}()
		t0 := time.Now()
		lat := followFirstLines(b, c, b.N)
		cancel()
		wg.Wait()
		reportFollow(b, lat)
		b.ReportMetric(float64(ran)/time.Since(t0).Seconds(), "pipeline-tasks/s")
	})
}

// followFirstLines runs n one-task sets, one after the other, each
// followed from its request on, and returns each first line's
// milliseconds from the task's write to its follower's receipt.
func followFirstLines(b *testing.B, c *client.Client, n int) []float64 {
	b.Helper()
	ctx := context.Background()
	spec := sched.TaskSpec{Argv: []string{"sh", "-c", "sleep 0.2; date +%s%N; sleep 0.2"}, NoSpeculation: true}
	lat := make([]float64, 0, n)
	for range n {
		res, err := c.Disclose(ctx, client.DiscloseInput{Tasks: []sched.TaskSpec{spec}, Request: true})
		if err != nil {
			b.Fatal(err)
		}
		var (
			line []byte
			got  bool
		)
		err = c.FollowOutput(ctx, sched.TaskRef{Set: res.Set.ID}, client.FollowFrom{}, func(ch client.OutputChunk) error {
			at := time.Now()
			line = append(line, ch.Stdout...)
			i := strings.IndexByte(string(line), '\n')
			if i < 0 {
				return nil
			}
			ns, err := strconv.ParseInt(string(line[:i]), 10, 64)
			if err != nil {
				b.Fatalf("task printed %q: %v", line, err)
			}
			if ch.Ended {
				// The task's report overtook the line's push: the line
				// came from the stored output, late all the same.
				b.Logf("the first line came with the task's end, %.1f ms after its write", float64(at.UnixNano()-ns)/1e6)
			}
			lat, got = append(lat, float64(at.UnixNano()-ns)/1e6), true
			return client.ErrStopWatch
		})
		if err != nil {
			b.Fatal(err)
		}
		if !got {
			b.Fatal("no line followed")
		}
		waitSet(b, c, res.Set.ID)
	}
	return lat
}

func reportFollow(b *testing.B, lat []float64) {
	b.Helper()
	b.ReportMetric(quantile(lat, 0.5), "median-ms")
	b.ReportMetric(quantile(lat, 0.99), "p99-ms")
	b.ReportMetric(quantile(lat, 0), "min-ms")
}

// waitSetCtx waits until every task of set has ended or ctx is done.
func waitSetCtx(ctx context.Context, c *client.Client, set sched.SetID) {
	_ = c.Watch(ctx, set, func(u client.WatchUpdate) error {
		if u.Set.Counts.Finished+u.Set.Counts.Canceled >= u.Set.Counts.Total {
			return client.ErrStopWatch
		}
		return nil
	})
}
