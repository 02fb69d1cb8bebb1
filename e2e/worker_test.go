package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestWorkerKill kills a `batchd worker` process in the middle of a copy:
// the server sees its lease lapse, marks the copy lost, and the task runs
// again on the other worker and is billed once, for the winning copy.
func TestWorkerKill(t *testing.T) {
	c := startServer(t, "--slots", "0", "--lease", "10s") // the killed worker's copy is lost a lease later
	workers := map[string]*proc{
		"wa": c.startWorker("wa", 1),
		"wb": c.startWorker("wb", 1),
	}
	waitFor(t, patience, "two workers up", func() bool {
		var cl struct {
			Workers []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"workers"`
		}
		c.ctlJSON(&cl, "cluster")
		up := 0
		for _, w := range cl.Workers {
			if w.State == "up" && workers[w.ID] != nil {
				up++
			}
		}
		return up == 2
	})

	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--no-speculation", "--", "sh", "-c", `sleep 2; echo "done by $BATCH_COPY_ID"`)
	task := fmt.Sprintf("%d/0", d.Set.ID)

	var first jsonCopy
	waitFor(t, patience, "a running copy", func() bool {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
		for _, cp := range st.Tasks[0].Copies {
			if cp.State == "running" {
				first = cp
				return true
			}
		}
		return false
	})
	victim := workers[first.Worker]
	if victim == nil {
		t.Fatalf("copy %+v runs on a worker the test did not start", first)
	}
	victim.kill()

	r := c.mustCtl("request", task)
	if !strings.HasPrefix(r.stdout, "done by ") {
		t.Errorf("request printed %q", r.stdout)
	}
	var out jsonOutput
	c.ctlJSON(&out, "output", task)
	if out.Worker == first.Worker || out.Copy == first.ID {
		t.Errorf("the result came from copy %d on %s, the killed worker's copy", out.Copy, out.Worker)
	}
	if got, want := r.stdout, fmt.Sprintf("done by %d\n", out.Copy); got != want {
		t.Errorf("request printed %q, want %q", got, want)
	}

	var st jsonStatus
	c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
	states := map[int64]string{}
	for _, cp := range st.Tasks[0].Copies {
		states[cp.ID] = cp.State
	}
	if states[first.ID] != "lost" || states[out.Copy] != "won" {
		t.Errorf("copies = %+v, want %d lost and %d won", st.Tasks[0].Copies, first.ID, out.Copy)
	}

	var b jsonBill
	c.ctlJSON(&b, "bill")
	if len(b.Lines) != 1 || b.Lines[0].Copy != out.Copy || b.Lines[0].Set != d.Set.ID {
		t.Errorf("bill lines = %+v, want one line for copy %d", b.Lines, out.Copy)
	}
}

// TestServerRestartKeepsRemoteWork SIGKILLs the server while a remote
// worker runs a copy: the worker keeps it running, re-registers with the
// restarted server, and hands over the result, so the task is neither run
// twice nor billed twice.
func TestServerRestartKeepsRemoteWork(t *testing.T) {
	args := []string{"--slots", "0", "--lease", "60s"} // the worker has a lease to register again after the restart
	c := startServer(t, args...)
	c.startWorker("remote", 1)

	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--no-speculation", "--", "sh", "-c", `sleep 3; echo "copy $BATCH_COPY_ID"`)
	var first jsonCopy
	waitFor(t, patience, "a running copy", func() bool {
		var st jsonStatus
		c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
		for _, cp := range st.Tasks[0].Copies {
			if cp.State == "running" {
				first = cp
				return true
			}
		}
		return false
	})
	c.server.kill()
	c.start(args...)

	task := fmt.Sprintf("%d/0", d.Set.ID)
	if got, want := c.mustCtl("request", task).stdout, fmt.Sprintf("copy %d\n", first.ID); got != want {
		t.Errorf("result = %q, want %q: the copy that ran through the restart", got, want)
	}
	var st jsonStatus
	c.ctlJSON(&st, "status", fmt.Sprint(d.Set.ID))
	if cps := st.Tasks[0].Copies; len(cps) != 1 || cps[0].ID != first.ID || cps[0].State != "won" {
		t.Errorf("copies = %+v, want only copy %d, won", cps, first.ID)
	}
	var b jsonBill
	c.ctlJSON(&b, "bill")
	if len(b.Lines) != 1 || b.Lines[0].Copy != first.ID {
		t.Errorf("bill lines = %+v, want one line for copy %d", b.Lines, first.ID)
	}
}
