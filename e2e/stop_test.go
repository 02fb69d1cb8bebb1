package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// jsonStopSet is status --json's set with its stop rule and holds.
type jsonStopSet struct {
	ID     int64 `json:"id"`
	Counts struct {
		Disclosed, Executed, Requested, Finished, Canceled, Running, Held int64
	} `json:"counts"`
	Stop *struct {
		OnSuccess bool    `json:"on_success"`
		OnExit    []int32 `json:"on_exit"`
	} `json:"stop"`
	Stopped *struct {
		Index    int32  `json:"index"`
		Why      string `json:"why"`
		Canceled int64  `json:"canceled"`
	} `json:"stopped"`
}

type jsonStopStatus struct {
	Set   jsonStopSet `json:"set"`
	Tasks []jsonTask  `json:"tasks"`
}

func (c *cluster) stopStatus(set int64) jsonStopStatus {
	c.t.Helper()
	var st jsonStopStatus
	c.ctlJSON(&st, "status", fmt.Sprint(set))
	return st
}

// TestStopRuleWithWorker runs a stop rule on a real worker process: of 20
// disclosed tasks, task 2 exits 3 while three others sleep; the rule
// fires on it, the worker kills the sleepers, the rest never start, and
// the bill holds task 2 alone once it is requested. A held set's running
// copy is suspended with --suspend and its queued task waits; release
// runs it.
func TestStopRuleWithWorker(t *testing.T) {
	c := startServer(t, "--slots", "0")
	c.startWorker("w", 4)
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--name", "search", "--stop-on-exit", "3", "--array", "0-19", "--",
		`if [ "$BATCH_ARRAY_VALUE" = 2 ]; then sleep 0.3; exit 3; fi; sleep 60`)
	set := d.Set.ID
	var st jsonStopStatus
	waitFor(t, patience, "the rule to fire and the sleepers to be killed", func() bool {
		st = c.stopStatus(set)
		return st.Set.Stopped != nil && st.Set.Counts.Running == 0
	})
	if s := st.Set; s.Stopped.Index != 2 || s.Stopped.Why != "exit 3" || s.Stopped.Canceled != 19 || s.Counts.Canceled != 19 || s.Counts.Executed != 1 {
		t.Fatalf("set after the stop: %+v", s)
	}
	for _, task := range st.Tasks {
		if task.Index > 3 && len(task.Copies) > 0 {
			t.Errorf("task %d started after the rule fired: %+v", task.Index, task.Copies)
		}
	}
	if r := c.ctl("request", fmt.Sprintf("%d/2", set)); r.code != 3 {
		t.Fatalf("request of the task that fired: exit %d, %q", r.code, r.stderr)
	}
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines")
	if got := billByTask(bill); len(got) != 1 || got[ref{set, 2}] != 1 {
		t.Fatalf("billed %v, want task %d/2 once", got, set)
	}

	// Hold with --suspend: the running copy stops, the queued task waits.
	var h jsonDisclose
	c.ctlJSON(&h, "disclose", "--name", "held", "--max-running", "1", "--array", "0-1", "--", `sleep 0.5; echo "h-$BATCH_ARRAY_VALUE"`)
	waitFor(t, patience, "the first task to run", func() bool { return c.stopStatus(h.Set.ID).Set.Counts.Running == 1 })
	c.mustCtl("hold", "--suspend", fmt.Sprint(h.Set.ID))
	waitFor(t, patience, "the copy to be suspended", func() bool {
		for _, task := range c.stopStatus(h.Set.ID).Tasks {
			for _, cp := range task.Copies {
				if cp.State == "suspended" {
					return true
				}
			}
		}
		return false
	})
	if out := c.mustCtl("why", fmt.Sprintf("%d/1", h.Set.ID)).stdout; !strings.Contains(out, "held") {
		t.Fatalf("why of the held task: %s", out)
	}
	c.mustCtl("release", fmt.Sprint(h.Set.ID))
	for i := 0; i < 2; i++ {
		if got, want := c.mustCtl("request", fmt.Sprintf("%d/%d", h.Set.ID, i)).stdout, fmt.Sprintf("h-%d\n", i); got != want {
			t.Errorf("task %d printed %q, want %q", i, got, want)
		}
	}
}
