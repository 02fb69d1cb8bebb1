package e2e

import (
	"encoding/csv"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"batchd/client"
	"batchd/sched"
)

// TestSimReplay: a real server (srpt×fcfs, no speculation) with a real
// 4-slot worker records a small workload: a job of 8 tasks of 1 s, then 6
// jobs of one 0.2 s task each, submitted one after another. `batchd sim
// replay` reads the store and runs that history again: under the recorded
// configuration its mean job completion time is near the recorded one; under
// fcfs×fcfs the short jobs wait behind the long job's second wave, so the
// mean is clearly longer than under srpt×fcfs.
func TestSimReplay(t *testing.T) {
	c := startServer(t, "--slots", "0", "--policy", "srpt×fcfs", "--speculation", "none")
	c.startWorker("w1", 4)
	cl := client.New(client.Config{Server: c.url(), HTTPClient: client.WithToken(&http.Client{}, c.adminToken()), RetryFor: patience})
	ctx := t.Context()
	// The worker must be up before the first job, or the replay's cluster
	// would have been idle at the start.
	waitFor(t, patience, "the worker to register", func() bool {
		info, err := cl.GetCluster(ctx)
		return err == nil && info.Slots == 4
	})
	job := func(n int, secs string) sched.SetID {
		specs := make([]sched.TaskSpec, n)
		for i := range specs {
			specs[i] = sched.TaskSpec{Argv: []string{"sleep", secs}}
		}
		res, err := cl.Disclose(ctx, client.DiscloseInput{Tasks: specs, Request: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.Set.ID
	}
	sets := map[sched.SetID]int{job(8, "1"): 8}
	for range 6 {
		sets[job(1, "0.2")] = 1
	}
	for id, n := range sets {
		waitSetFinished(t, ctx, cl, id, n)
	}
	c.server.stop()

	cmd := exec.Command(c.batchd, "sim", "replay", "--data", c.data, "-p", "fcfs×fcfs,srpt×fcfs", "-s", "none", "--seeds", "2", "--format", "csv")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("batchd sim replay: %v\n%s", err, out)
	}
	t.Logf("batchd sim replay:\n%s", out)
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	mean := map[string]float64{}
	reqs := map[string]int{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(strings.Fields(r[2])[0], 64)
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		n, _ := strconv.Atoi(r[1])
		mean[r[0]], reqs[r[0]] = v, n
	}
	// The server's default is preemptive SRPT in the requested class
	// (--preempt-requested), recorded with its configuration and carried
	// into the replays ("+requested").
	rec, recorded := mean["recorded (live)"], mean["recorded: srpt×fcfs / none / suspend+requested"]
	fcfs, srpt := mean["fcfs×fcfs / none / suspend+requested"], recorded
	if reqs["recorded (live)"] != 7 || reqs["recorded: srpt×fcfs / none / suspend+requested"] != 7 || reqs["fcfs×fcfs / none / suspend+requested"] != 7 {
		t.Fatalf("requests %v, want 7 jobs in every row", reqs)
	}
	// The live run has dispatch and report latency the replay has not, and
	// its submissions were spread by the client's calls: near, not equal.
	if recorded < 0.5*rec || recorded > 1.5*rec+0.5 {
		t.Errorf("replay under the recorded configuration: mean %.3f s, recorded %.3f s", recorded, rec)
	}
	if !(fcfs > 1.3*srpt) {
		t.Errorf("fcfs×fcfs mean %.3f s, srpt×fcfs %.3f s: want FCFS clearly worse (short jobs behind the long job)", fcfs, srpt)
	}
}
