package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runs counts the lines a task appended to its run log: one per start.
func runs(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// waitLog waits until the process printed a line containing what.
func waitLog(t *testing.T, p *proc, what string) {
	t.Helper()
	waitFor(t, patience, fmt.Sprintf("%s to log %q", p.name, what), func() bool {
		return strings.Contains(p.out.String(), what) || p.exited()
	})
	if !strings.Contains(p.out.String(), what) {
		t.Fatalf("%s exited without logging %q", p.name, what)
	}
}

// TestGracefulStop sends SIGTERM to `batchd serve` while a requested task
// runs on its local slots: the server takes no new work but lets the copy
// finish (within --drain), records its result, and only then exits. After
// a restart the task is finished with its output and billed once, and it
// ran once: SIGTERM used to kill the copy, which then ran again.
func TestGracefulStop(t *testing.T) {
	args := []string{"--slots", "2", "--drain", "10m"} // the test, not the drain, decides when the copy ends
	c := startServer(t, args...)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "runs"), filepath.Join(dir, "go")
	script := fmt.Sprintf(`echo run >> %s; while [ ! -e %s ]; do sleep 0.05; done; echo "done $BATCH_COPY_ID"`, log, gate)
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--name", "drain", "--request", "--file", writeFile(t, "drain.txt", script))
	waitFor(t, patience, "the task to start", func() bool { return runs(t, log) == 1 })

	if err := c.server.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, c.server, "draining")
	if c.server.exited() {
		t.Fatalf("the server exited with a copy still running:\n%s", c.server.out.String())
	}
	// No new work while draining: the answer is Unavailable (which
	// batchctl, given time, retries until the server is back).
	late := exec.Command(c.batchctl, "--server", c.url(), "--retry", "0s", "--data", c.data, "--config", os.DevNull,
		"disclose", "--", "echo", "late")
	if out, err := late.CombinedOutput(); err == nil || !strings.Contains(string(out), "stopping") {
		t.Fatalf("a disclose while draining: %v\n%s", err, out)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, "the server to exit once the copy finished", c.server.exited)

	c.start(args...)
	var out jsonOutput
	c.ctlJSON(&out, "output", "--json", fmt.Sprintf("%d/0", d.Set.ID))
	if out.State != "finished" || out.ExitCode != 0 || out.Stdout != fmt.Sprintf("done %d\n", out.Copy) {
		t.Fatalf("after the restart: %+v, want finished with its output", out)
	}
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines")
	if n := billByTask(bill)[ref{d.Set.ID, 0}]; n != 1 {
		t.Fatalf("%d bill lines for the task, want 1", n)
	}
	if n := runs(t, log); n != 1 {
		t.Fatalf("the task ran %d times, want once", n)
	}
}

// TestGracefulStopTwice: a second SIGTERM while draining stops the server
// at once; the copy it killed is not a result (nothing billed), and its
// task runs again after the restart.
func TestGracefulStopTwice(t *testing.T) {
	args := []string{"--slots", "2", "--drain", "10m", "--lease", "10s"}
	c := startServer(t, args...)
	log := filepath.Join(t.TempDir(), "runs")
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--name", "twice", "--request", "--file",
		writeFile(t, "twice.txt", fmt.Sprintf(`echo run >> %s; sleep 3600`, log)))
	waitFor(t, patience, "the task to start", func() bool { return runs(t, log) == 1 })

	if err := c.server.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, c.server, "draining")
	if err := c.server.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Well before the 10 minutes of --drain.
	waitFor(t, patience, "the server to exit on the second SIGTERM", c.server.exited)
	if !strings.Contains(c.server.out.String(), "second signal") {
		t.Fatalf("no word of the second signal:\n%s", c.server.out.String())
	}

	c.start(args...)
	waitFor(t, patience, "the task to run again", func() bool { return runs(t, log) == 2 })
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines")
	if n := billByTask(bill)[ref{d.Set.ID, 0}]; n != 0 {
		t.Fatalf("%d bill lines for a task that never finished, want 0", n)
	}
	c.mustCtl("cancel", fmt.Sprintf("%d/0", d.Set.ID))
}
