package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlurmPilotEndWorkerFirst ends busy pilots by preemption and by the
// time limit with copies whose SIGTERM trap exits 0 at once: the copy that
// would race the worker's own stop and be delivered as a success. The
// worker must learn of the end first and hand its copies back before
// Slurm signals them: no copy's trap runs, every copy is lost on the ended
// pilot, and every task finishes on another pilot with its own output
// ("done N", which the trap's exit 0 would not print), billed once.
func TestSlurmPilotEndWorkerFirst(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")
	const n = 2

	// trapTasks writes n gated tasks whose trap logs the signal and exits
	// 0 (at once: the shell's wait returns on a trapped signal); it returns the task file, the start log, the trap log and the gate.
	trapTasks := func(t *testing.T) (file, log, trapped, gate string) {
		dir := t.TempDir()
		log, trapped, gate = filepath.Join(dir, "runs"), filepath.Join(dir, "trapped"), filepath.Join(dir, "go")
		var b strings.Builder
		for range n {
			fmt.Fprintf(&b, `trap 'echo "$BATCH_TASK_INDEX $BATCH_COPY_ID" >> %s; exit 0' TERM; echo "$BATCH_TASK_INDEX $BATCH_COPY_ID" >> %s; while [ ! -e %s ]; do sleep 0.05 & wait $!; done; echo "done $BATCH_TASK_INDEX"`+"\n",
				trapped, log, gate)
		}
		return writeFile(t, "trap0.txt", b.String()), log, trapped, gate
	}
	check := func(t *testing.T, set int64, trapped, gate string, ended map[string]bool) {
		t.Helper()
		if b, err := os.ReadFile(trapped); err == nil && len(b) > 0 {
			t.Errorf("copies saw the pilot's SIGTERM before the worker handed them back (task, copy):\n%s", b)
		}
		finishAfterPilotEnds(t, c, set, n, gate, ended)
	}

	t.Run("preemption", func(t *testing.T) {
		pool := startPool(t, c, "pz", "--max-pilots", "2", "--idle", "30s", "--partition", "low")
		defer pool.stop()
		file, log, trapped, gate := trapTasks(t)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "pz", "--file", file)
		waitFor(t, patience, "both tasks to run on pilots in low", func() bool { return runs(t, log) >= n })
		before := runningPilots(s, "pz")
		s.run("sbatch", "--parsable", "-p", "high", "-n", "4", "-o", "/dev/null", "--wrap", "sleep 2")
		waitFor(t, patience, "both copies to be handed back", func() bool { return len(lostOn(c, d.Set.ID, before)) >= n })
		check(t, d.Set.ID, trapped, gate, before)
	})

	t.Run("time limit", func(t *testing.T) {
		pool := startPool(t, c, "tz", "--max-pilots", "2", "--idle", "30s", "--time", "1")
		defer pool.stop()
		file, log, trapped, gate := trapTasks(t)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "tz", "--file", file)
		waitFor(t, patience, "both tasks to run", func() bool { return runs(t, log) >= n })
		before := runningPilots(s, "tz")
		waitFor(t, patience, "the pilots' end to hand both copies back", func() bool {
			return len(lostOn(c, d.Set.ID, before)) >= n
		})
		check(t, d.Set.ID, trapped, gate, before)
	})
}
