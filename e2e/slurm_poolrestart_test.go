package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestSlurmPoolRestart stops the pool while its pilot serves; the pilot
// reaches its time limit meanwhile and its worker's lease lapses. The restarted pool finds it ended and
// takes that end for what it is (a pilot that served), not for a failure
// to back off from; work that comes later runs, each task billed once.
func TestSlurmPoolRestart(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")
	t.Setenv("BATCH_WORKER_TOKEN", c.workerToken())
	dir := t.TempDir()
	// No --cancel-on-exit: the pilots outlive the pool.
	args := []string{"pool", "slurm", "--server", c.url(), "--name", "rs", "--slots", "1", "--interval", "500ms", "--backoff", "1m",
		"--chdir", dir, "--worker-arg=--isolation=none", "--max-pilots", "1", "--idle", "5m", "--time", "1"}
	first := startProc(t, "batchd pool rs (first)", c.batchd, args...)
	run := func(name string, n int) {
		t.Helper()
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "echo done %d\n", i)
		}
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", name, "--file", writeFile(t, name+".txt", b.String()))
		waitFor(t, patience, "the "+name+" tasks to finish", func() bool { return setFinished(c, d.Set.ID, n) })
		checkFinishedOnce(t, c, d.Set.ID, n)
	}
	run("before", 2)
	var pilot string
	for _, j := range s.pilots("rs") {
		if j.state == "RUNNING" {
			pilot = j.id
		}
	}
	if pilot == "" {
		t.Fatalf("no running pilot after the first tasks: %v", s.pilots("rs"))
	}
	// The pilot reaches its time limit while no pool runs.
	first.stop()
	waitFor(t, patience, "pilot "+pilot+" to reach its time limit", func() bool {
		for _, j := range s.pilots("rs") {
			if j.id == pilot {
				return j.state == "TIMEOUT" || j.state == "COMPLETED" || j.state == "CANCELLED"
			}
		}
		return true
	})
	// ... and its worker's lease lapses after its goodbye: the server no
	// longer lists it up.
	waitFor(t, patience, "the pilot's worker to be down", func() bool {
		var cl struct {
			Workers []struct{ ID, State string } `json:"workers"`
		}
		c.ctlJSON(&cl, "cluster")
		for _, w := range cl.Workers {
			if w.ID == "slurm-"+pilot && w.State == "up" {
				return false
			}
		}
		return true
	})
	second := startProc(t, "batchd pool rs (second)", c.batchd, args...)
	run("after", 2)
	for _, bad := range []string{"without serving", "backing off", "never registered"} {
		if out := second.out.String(); strings.Contains(out, bad) {
			t.Errorf("the restarted pool says %q:\n%s", bad, out)
		}
	}
}
