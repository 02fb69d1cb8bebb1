package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMaxRunningAndWhy: real binaries, 3 slots. A set capped at 2 never
// runs more than 2 tasks at once (each task counts the marker files of
// the tasks running beside it), while a second set uses the third slot;
// and a capped set's waiting task is explained by why, with an estimate.
func TestMaxRunningAndWhy(t *testing.T) {
	c := startServer(t, "--slots", "3")
	dir := t.TempDir()
	line := fmt.Sprintf(`touch %s/r.$BATCH_COPY_ID; ls %s | grep -c '^r\.'; sleep 0.3; rm %s/r.$BATCH_COPY_ID`, dir, dir, dir)
	var lines []string
	for range 6 {
		lines = append(lines, line)
	}
	var capped jsonDisclose
	// No speculation here: a copy killed after losing a race would leave
	// its marker behind (the scheduler's count of speculative copies
	// against the cap is sched's property test).
	c.ctlJSON(&capped, "disclose", "--request", "--no-speculation", "--max-running", "2", "--file", writeFile(t, "capped.txt", lines...))
	other := c.mustCtl("disclose", "-q", "--request", "--", "sleep", "1")
	c.mustCtl("request", "-q", strings.TrimSpace(other.stdout))
	c.ctl("request", "-q", fmt.Sprint(capped.Set.ID)) // waits for all six
	for i := range 6 {
		out := strings.TrimSpace(c.mustCtl("output", fmt.Sprintf("%d/%d", capped.Set.ID, i)).stdout)
		n, err := strconv.Atoi(out)
		if err != nil || n > 2 {
			t.Errorf("task %d saw %q copies of its set running, want at most 2", i, out)
		}
	}

	// Why: one copy at a time, estimates of 30 s.
	var slow jsonDisclose
	c.ctlJSON(&slow, "disclose", "--request", "--max-running", "1", "--estimate", "30s", "--", "sleep", "30")
	c.mustCtl("disclose", "--set", fmt.Sprint(slow.Set.ID), "--request", "--estimate", "30s", "--", "sleep", "30")
	var why struct {
		Tasks []struct {
			Index          int32   `json:"index"`
			Reason         string  `json:"reason"`
			Class          string  `json:"class"`
			MaxRunning     int     `json:"max_running"`
			StartInSeconds float64 `json:"start_in_seconds"`
			Assumptions    string  `json:"assumptions"`
		} `json:"tasks"`
	}
	waitFor(t, time.Minute, "the first slow task to run", func() bool {
		c.ctlJSON(&why, "why", fmt.Sprintf("%d/0-1", slow.Set.ID))
		return len(why.Tasks) == 2 && why.Tasks[0].Reason == "running"
	})
	w := why.Tasks[1]
	if w.Reason != "max-running" || w.Class != "requested" || w.MaxRunning != 1 || w.StartInSeconds <= 0 || !strings.Contains(w.Assumptions, "30s") {
		t.Errorf("why %d/1: %+v; want capped at 1 with an estimate from the 30 s estimates", slow.Set.ID, w)
	}
	if st := c.mustCtl("status", fmt.Sprint(slow.Set.ID)).stdout; !strings.Contains(st, "max-running") {
		t.Errorf("status has no max-running in its WHY column:\n%s", st)
	}
	c.mustCtl("cancel", fmt.Sprintf("%d/0-1", slow.Set.ID))
}
