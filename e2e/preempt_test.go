//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreemptRequested: with batchd serve's default --preempt-requested
// (preemptive SRPT in the requested class), a short requested
// task that finds the only slot taken by a long requested task suspends
// the long one's copy (its process group is stopped while the short task
// runs), and the long copy then resumes on its own worker: the same
// process finishes it, with no second copy. The long task cannot finish
// before the test lets it, so without preemption the short task would wait
// behind it and the test times out (BATCHD_PREEMPT_REQUESTED=false shows it).
func TestPreemptRequested(t *testing.T) {
	c := startServer(t, "--slots", "1", "--speculation", "none")
	dir := t.TempDir()
	pidFile, goFile := filepath.Join(dir, "long.pid"), filepath.Join(dir, "go")

	var long jsonDisclose
	c.ctlJSON(&long, "disclose", "--name", "long", "--request", "--estimate", "10m", "--",
		"sh", "-c", fmt.Sprintf(`echo $$ > %s.tmp && mv %s.tmp %s; while [ ! -e %s ]; do sleep 0.05; done; echo long $$`, pidFile, pidFile, pidFile, goFile))
	waitFor(t, patience, "the long task to start", func() bool {
		_, err := os.Stat(pidFile)
		return err == nil
	})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))

	// The short task reports the long task's process state while it runs:
	// "T" (stopped) if its copy was suspended. It polls for a while because
	// the worker's SIGSTOP and its start need not land in that order. A
	// SIGSTOP that lands between the shell's vfork of sleep and the exec
	// stops the child, and leaves the shell waiting for it ("D"): a
	// stopped child counts as the copy stopped.
	var short jsonDisclose
	c.ctlJSON(&short, "disclose", "--name", "short", "--request", "--estimate", "1s", "--",
		"sh", "-c", fmt.Sprintf(`P=%s; for i in $(seq 600); do s=$(cut -d' ' -f3 /proc/$P/stat); `+
			`if [ "$s" = D ]; then for k in $(cat /proc/$P/task/$P/children 2>/dev/null); do [ "$(cut -d' ' -f3 /proc/$k/stat)" = T ] && s=T; done; fi; `+
			`[ "$s" = T ] && break; sleep 0.05; done; echo short $s`, pid))
	var st jsonStatus
	waitFor(t, patience, "the short task to finish while the long one cannot", func() bool {
		c.ctlJSON(&st, "status", fmt.Sprint(short.Set.ID))
		return len(st.Tasks) == 1 && st.Tasks[0].State == "finished"
	})
	r := c.mustCtl("output", fmt.Sprintf("%d/0", short.Set.ID))
	if got, want := r.stdout, "short T\n"; got != want {
		t.Fatalf("short task printed %q, want %q: the long task's copy was not suspended while it ran", got, want)
	}
	c.ctlJSON(&st, "status", fmt.Sprint(long.Set.ID))
	if len(st.Tasks) != 1 || st.Tasks[0].State == "finished" {
		t.Fatalf("long task before release: %+v", st.Tasks)
	}

	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = c.mustCtl("request", fmt.Sprintf("%d/0", long.Set.ID))
	if got, want := r.stdout, "long "+pid+"\n"; got != want {
		t.Fatalf("long task printed %q, want %q (the suspended process resumed, not a new copy)", got, want)
	}
	c.ctlJSON(&st, "status", fmt.Sprint(long.Set.ID))
	if len(st.Tasks) != 1 || len(st.Tasks[0].Copies) != 1 || st.Tasks[0].State != "finished" {
		t.Fatalf("long task: %+v, want finished with one copy", st.Tasks)
	}
}
