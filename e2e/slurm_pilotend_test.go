package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// signalTasks writes n tasks that log their start and wait for the gate
// file, then print their index. Even tasks turn SIGTERM into exit 143 (as
// a shell's trap does), odd ones ignore it (only SIGKILL ends them). It
// returns the task file, the log and the gate.
func signalTasks(t *testing.T, n int) (file, log, gate string) {
	t.Helper()
	dir := t.TempDir()
	log, gate = filepath.Join(dir, "runs"), filepath.Join(dir, "go")
	var b strings.Builder
	for i := range n {
		trap := `trap 'exit 143' TERM`
		if i%2 == 1 {
			trap = `trap '' TERM`
		}
		fmt.Fprintf(&b, `%s; echo "$BATCH_TASK_INDEX $BATCH_COPY_ID" >> %s; while [ ! -e %s ]; do sleep 0.05; done; echo "done $BATCH_TASK_INDEX"`+"\n",
			trap, log, gate)
	}
	return writeFile(t, "signal.txt", b.String()), log, gate
}

// lostOn returns the lost copies of the set's tasks on the pilots in ids,
// by worker name.
func lostOn(c *cluster, set int64, ids map[string]bool) []string {
	var lost []string
	for _, task := range taskCopies(c, set) {
		for _, cp := range task.Copies {
			if cp.State == "lost" && ids[strings.TrimPrefix(cp.Worker, "slurm-")] {
				lost = append(lost, cp.Worker)
			}
		}
	}
	return lost
}

// runningPilots returns the ids of the pool's running pilots.
func runningPilots(s *slurmCluster, pool string) map[string]bool {
	ids := map[string]bool{}
	for _, j := range s.pilots(pool) {
		if j.state == "RUNNING" {
			ids[j.id] = true
		}
	}
	return ids
}

// TestSlurmPilotEndsNotBilled ends busy pilots the two ways Slurm ends
// them by itself, preemption and the time limit, with copies that exit 143
// on SIGTERM and copies that ignore it: every copy goes back to the
// server, runs again and is billed once, never as the task's failure.
func TestSlurmPilotEndsNotBilled(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")
	const n = 2

	t.Run("preemption", func(t *testing.T) {
		pool := startPool(t, c, "pe", "--max-pilots", "2", "--idle", "30s", "--partition", "low")
		defer pool.stop()
		file, log, gate := signalTasks(t, n)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "pe", "--file", file)
		waitFor(t, patience, "both tasks to run on pilots in low", func() bool { return runs(t, log) >= n })
		before := runningPilots(s, "pe")
		s.run("sbatch", "--parsable", "-p", "high", "-n", "4", "-o", "/dev/null", "--wrap", "sleep 2")
		waitFor(t, patience, "both copies to be handed back", func() bool { return len(lostOn(c, d.Set.ID, before)) >= n })
		finishAfterPilotEnds(t, c, d.Set.ID, n, gate, before)
	})

	t.Run("time limit", func(t *testing.T) {
		pool := startPool(t, c, "tl", "--max-pilots", "2", "--idle", "30s", "--time", "1")
		defer pool.stop()
		file, log, gate := signalTasks(t, n)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "tl", "--file", file)
		waitFor(t, patience, "both tasks to run", func() bool { return runs(t, log) >= n })
		before := runningPilots(s, "tl")
		waitFor(t, patience, "the pilots' time limit to hand both copies back", func() bool {
			return len(lostOn(c, d.Set.ID, before)) >= n
		})
		for _, j := range s.pilots("tl") {
			if before[j.id] && j.state != "TIMEOUT" && j.state != "COMPLETING" {
				t.Logf("pilot %s ended %s", j.id, j.state)
			}
		}
		finishAfterPilotEnds(t, c, d.Set.ID, n, gate, before)
	})
}

// TestSlurmPilotLossesFail: a task longer than the pilots' time limit is
// handed back at each pilot's end, runs again on the next pilot, and after
// the server's limit of such losses fails with that reason, which status
// and why show, instead of looping; nothing is billed.
func TestSlurmPilotLossesFail(t *testing.T) {
	startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none", "--pilot-losses", "2")
	pool := startPool(t, c, "long", "--max-pilots", "1", "--idle", "10s", "--time", "1")
	defer pool.stop()
	log := filepath.Join(t.TempDir(), "runs")
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--name", "long", "--",
		"sh", "-c", `echo "$BATCH_COPY_ID" >> `+log+`; exec sleep 1000`)
	waitFor(t, 2*patience, "the task to fail after 2 pilot ends", func() bool {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
		return st.Set.Counts.Canceled == 1
	})
	var st struct {
		Tasks []struct {
			State      string `json:"state"`
			FailReason string `json:"fail_reason"`
		} `json:"tasks"`
	}
	c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
	if len(st.Tasks) != 1 || !strings.Contains(st.Tasks[0].FailReason, "lost 2 times to pilot ends") {
		t.Errorf("status: %+v, want the task canceled with its reason", st.Tasks)
	}
	if out := c.mustCtl("why", fmt.Sprintf("%d/0", d.Set.ID)).stdout; !strings.Contains(out, "lost 2 times to pilot ends") {
		t.Errorf("why says:\n%s\nwant the reason", out)
	}
	if n := runs(t, log); n != 2 {
		t.Errorf("the task ran %d times, want 2 (one per pilot end, then no more)", n)
	}
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines", "--set", fmt.Sprint(d.Set.ID))
	if len(bill.Lines) != 0 {
		t.Errorf("%d bill lines for a task lost to pilot ends, want none", len(bill.Lines))
	}
}

// noWinOnEnded fails t for each task of set whose winning copy ran on one
// of the ended pilots (named without the "slurm-" prefix).
// finishAfterPilotEnds opens the gate of a set of n gated tasks whose
// pilots in ended were ended, and checks that every task then finished
// exit 0, billed once, on a pilot other than the ended ones.
func finishAfterPilotEnds(t *testing.T, c *cluster, set int64, n int, gate string, ended map[string]bool) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, "every task to finish", func() bool { return setFinished(c, set, n) })
	checkFinishedOnce(t, c, set, n)
	noWinOnEnded(t, c, set, ended)
}

func noWinOnEnded(t *testing.T, c *cluster, set int64, ended map[string]bool) {
	t.Helper()
	for _, task := range taskCopies(c, set) {
		for _, cp := range task.Copies {
			if cp.State == "won" && ended[strings.TrimPrefix(cp.Worker, "slurm-")] {
				t.Errorf("task %d won on ended pilot %s", task.Index, cp.Worker)
			}
		}
	}
}
