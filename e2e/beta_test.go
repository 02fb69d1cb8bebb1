package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"batchd/client"
	"batchd/sched"
)

// The live β must come from reported run times: the server's β came out 1.41–1.46 where the
// Hill estimator on the stored durations of the same copies gave 1.30–1.36,
// because the scheduler learned each copy's time from its start decision to
// the report's arrival (the assignment's and the report's trips, the fork),
// not the run time the worker reported and the store kept. Here the worker
// reaches the server through a proxy that delays each direction by
// lagEachWay (a remote worker: 0.15 s a round trip, the figure that
// reproduced the issue), 48 requested tasks sleep for Pareto(β 1.259, scale
// 0.3 s) quantiles on 16 slots, with no speculation (so no censored
// samples), and the server's β must be the Hill fit of the durations the
// store kept, within 0.02 (0.15 s more on every sample moves the fit by
// about 0.1).
func TestLiveBetaFitsStoredDurations(t *testing.T) {
	c := startServer(t, "--slots", "0", "--speculation", "none")
	c.startWorkerVia(startDelayProxy(t, c.addr, lagEachWay).url(), "w1", 16)
	cl := client.New(client.Config{Server: c.url(), HTTPClient: client.WithToken(&http.Client{}, c.adminToken()), RetryFor: patience})
	ctx := t.Context()
	const n = 48
	var specs []sched.TaskSpec
	for i := range n {
		// Quantile (i+0.5)/n, shuffled so that long ones do not all start
		// last.
		q := (float64((i*17)%n) + 0.5) / n
		d := 0.3 * math.Pow(1-q, -1/1.259)
		specs = append(specs, sched.TaskSpec{Argv: []string{"sleep", fmt.Sprintf("%.3f", d)}})
	}
	res, err := cl.Disclose(ctx, client.DiscloseInput{Name: "pareto", Tasks: specs, Request: true})
	if err != nil {
		t.Fatal(err)
	}
	tasks := waitSetFinished(t, ctx, cl, res.Set.ID, n)
	var stored []float64
	for _, tk := range tasks {
		stored = append(stored, tk.ServiceSeconds)
	}
	want := sched.Hill(stored, nil)
	info, err := cl.GetCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := info.Metrics.Beta
	t.Logf("server β %.4f from %d samples; Hill on the %d stored durations %.4f", got, info.Metrics.BetaSamples, len(stored), want)
	if info.Metrics.BetaSamples != n {
		t.Fatalf("β from %d samples, want %d (one per finished copy)", info.Metrics.BetaSamples, n)
	}
	if math.Abs(got-want) > 0.02 {
		t.Fatalf("server β %.4f, Hill on the stored durations %.4f: the samples the estimator gets are not the stored durations", got, want)
	}
}

// Running copies must be judged on the same basis as β's samples: 2,000
// requested `true` tasks (a few ms each, about 0.1 s of dispatch and report
// latency) on 64 slots must not start a flood of speculative copies. With
// β fitted on reported run times and running copies judged by the server's
// clock, this started 1,562; by the server's clock alone, 17. The worker is
// behind the same delaying proxy as above.
func TestLiveNoSpeculationFloodOnShortTasks(t *testing.T) {
	c := startServer(t, "--slots", "0")
	c.startWorkerVia(startDelayProxy(t, c.addr, lagEachWay).url(), "w1", 64)
	cl := client.New(client.Config{Server: c.url(), HTTPClient: client.WithToken(&http.Client{}, c.adminToken()), RetryFor: patience})
	ctx := t.Context()
	const n = 2000
	specs := make([]sched.TaskSpec, n)
	for i := range specs {
		specs[i] = sched.TaskSpec{Argv: []string{"true"}}
	}
	res, err := cl.Disclose(ctx, client.DiscloseInput{Name: "true", Tasks: specs, Request: true})
	if err != nil {
		t.Fatal(err)
	}
	waitSetFinished(t, ctx, cl, res.Set.ID, n)
	info, err := cl.GetCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := info.Metrics
	t.Logf("%d tasks: %d speculative copies started (%d won), β %.3f from %d samples", n, m.SpeculativeCopiesStarted, m.SpeculativeCopiesWon, m.Beta, m.BetaSamples)
	if m.SpeculativeCopiesStarted >= n/20 {
		t.Fatalf("%d speculative copies for %d `true` tasks (≥ 5%%): running copies are judged on another basis than β's samples", m.SpeculativeCopiesStarted, n)
	}
}

// lagEachWay is the delay the proxy adds in each direction.
const lagEachWay = 75 * time.Millisecond

// startWorkerVia starts `batchd worker` against url (a proxy to the server).
func (c *cluster) startWorkerVia(url, name string, slots int) *proc {
	c.t.Helper()
	return startProc(c.t, "batchd worker "+name, c.batchd, "worker", "--server", url, "--token-file", tokenFile(c.t, c.workerToken()), "--isolation", "none",
		"--name", name, "--slots", fmt.Sprint(slots), "--state-dir", filepath.Join(c.t.TempDir(), name))
}

// waitSetFinished polls until every one of the set's n tasks finished and
// returns them.
func waitSetFinished(t *testing.T, ctx context.Context, cl *client.Client, set sched.SetID, n int) []sched.Task {
	t.Helper()
	var tasks []sched.Task
	waitFor(t, 2*patience, fmt.Sprintf("%d tasks of set %d to finish", n, set), func() bool {
		tasks = tasks[:0]
		tok := ""
		for {
			p, err := cl.GetTaskSet(ctx, client.GetTaskSetInput{Set: set, PageSize: 1000, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			if p.Set.Counts.Finished < int64(n) {
				return false
			}
			tasks = append(tasks, p.Tasks...)
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		return len(tasks) == n
	})
	return tasks
}
