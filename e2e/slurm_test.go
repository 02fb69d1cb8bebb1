package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// slurmCluster is a one-node Slurm started with e2e/slurm/start.sh.
type slurmCluster struct {
	t   *testing.T
	dir string
}

// startSlurm starts a one-node Slurm (4 virtual CPUs; partitions high and
// the preemptible low) for the test and stops exactly its daemons at the
// end. It skips without slurmctld or root, except under CI=true, where
// .ci/setup installs Slurm and the test runs as root: there it fails.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	scripts := slurmScripts(t)
	dir := filepath.Join(t.TempDir(), "slurm")
	out, err := exec.Command(filepath.Join(scripts, "start.sh"), dir, "4").CombinedOutput()
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(scripts, "stop.sh"), dir).CombinedOutput(); err != nil {
			t.Errorf("stop.sh: %v\n%s", err, out)
		}
		if t.Failed() {
			for _, f := range []string{"slurmctld.log", "slurmd.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, "log", f))
				lines := strings.Split(string(b), "\n")
				t.Logf("--- last lines of %s:\n%s", f, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	if err != nil {
		t.Fatalf("e2e/slurm/start.sh: %v\n%s", err, out)
	}
	t.Setenv("SLURM_CONF", filepath.Join(dir, "slurm.conf"))
	return &slurmCluster{t: t, dir: dir}
}

// slurmScripts returns the directory of start.sh and stop.sh. It skips
// without slurmctld or root, except under CI=true, where .ci/setup
// installs Slurm and the test runs as root: there it fails.
func slurmScripts(t *testing.T) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if _, err := exec.LookPath("slurmctld"); err != nil {
		if _, serr := os.Stat("/usr/sbin/slurmctld"); serr != nil {
			if ci {
				t.Fatal("CI=true but slurmctld is missing: .ci/setup installs slurm-wlm and munge")
			}
			t.Skip("slurmctld is missing (apt-get install slurm-wlm munge, or run e2e/slurm/start.sh as root)")
		}
	}
	if os.Geteuid() != 0 {
		if ci {
			t.Fatal("CI=true but not root: the Slurm test starts slurmd, which needs root")
		}
		t.Skip("the Slurm test starts slurmd and needs root")
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "slurm")
}

// slurmJob is one line of squeue.
type slurmJob struct {
	id, state, name, partition string
}

// jobs lists every job Slurm keeps, ended ones too.
func (s *slurmCluster) jobs() []slurmJob {
	s.t.Helper()
	out, err := exec.Command("squeue", "-h", "-t", "all", "-o", "%i|%T|%j|%P").Output()
	if err != nil {
		s.t.Fatalf("squeue: %v", err)
	}
	var js []slurmJob
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 4 {
			js = append(js, slurmJob{id: f[0], state: f[1], name: f[2], partition: f[3]})
		}
	}
	return js
}

// pilots lists the pool's pilot jobs.
func (s *slurmCluster) pilots(pool string) []slurmJob {
	var out []slurmJob
	for _, j := range s.jobs() {
		if strings.HasPrefix(j.name, "batchd-"+pool+"-") {
			out = append(out, j)
		}
	}
	return out
}

func (s *slurmCluster) run(name string, args ...string) string {
	s.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// startPool runs `batchd pool slurm` against c with one slot per pilot.
func startPool(t *testing.T, c *cluster, name string, args ...string) *proc {
	t.Helper()
	t.Setenv("BATCH_WORKER_TOKEN", c.workerToken())
	all := append([]string{"pool", "slurm", "--server", c.url(), "--name", name, "--slots", "1",
		"--interval", "500ms", "--backoff", "1s", "--chdir", t.TempDir(), "--cancel-on-exit", "--worker-arg=--isolation=none"}, args...)
	return startProc(t, "batchd pool "+name, c.batchd, all...)
}

// gatedTasks writes n tasks that log their start and wait for the gate
// file, then print their index; it returns the task file, the log and the
// gate.
func gatedTasks(t *testing.T, n int) (file, log, gate string) {
	t.Helper()
	dir := t.TempDir()
	log, gate = filepath.Join(dir, "runs"), filepath.Join(dir, "go")
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, `echo "$BATCH_TASK_INDEX $BATCH_COPY_ID" >> %s; while [ ! -e %s ]; do sleep 0.05; done; echo "done $BATCH_TASK_INDEX"`+"\n", log, gate)
	}
	return writeFile(t, "gated.txt", b.String()), log, gate
}

// taskCopies returns the set's tasks with their copies.
func taskCopies(c *cluster, set int64) []jsonTask {
	var st jsonStatus
	c.ctlJSON(&st, "status", fmt.Sprint(set))
	return st.Tasks
}

// checkFinishedOnce checks that every task of the set finished with exit 0
// and its own output, and that the bill has exactly one line per task.
func checkFinishedOnce(t *testing.T, c *cluster, set int64, n int) {
	t.Helper()
	for i := range n {
		var out jsonOutput
		c.ctlJSON(&out, "output", fmt.Sprintf("%d/%d", set, i))
		if out.State != "finished" || out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != fmt.Sprintf("done %d", i) {
			t.Errorf("task %d/%d: %+v, want finished, exit 0, \"done %d\"", set, i, out, i)
		}
	}
	var bill jsonBill
	c.ctlJSON(&bill, "bill", "--lines", "--set", fmt.Sprint(set))
	by := billByTask(bill)
	for i := range n {
		if by[ref{set, int32(i)}] != 1 {
			t.Errorf("task %d/%d has %d bill lines, want 1", set, i, by[ref{set, int32(i)}])
		}
	}
	if len(bill.Lines) != n {
		t.Errorf("%d bill lines for %d tasks", len(bill.Lines), n)
	}
}

// setFinished says whether all n tasks of the set finished.
func setFinished(c *cluster, set int64, n int) bool {
	var st jsonStatus
	c.ctlJSON(&st, "status", fmt.Sprint(set))
	return st.Set.Counts.Finished == int64(n)
}

// TestSlurmPool runs `batchd pool slurm` against a real one-node Slurm:
// requested work brings pilots up and the results come back; idle pilots
// leave by themselves; scancel of a busy pilot loses no task and bills each
// once; a pilot in the preemptible partition, preempted by a job in the high
// partition, hands its copies back and they finish on another pilot,
// billed once.
func TestSlurmPool(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")

	t.Run("requested work brings pilots up; idle pilots leave", func(t *testing.T) {
		pool := startPool(t, c, "up", "--max-pilots", "3", "--idle", "3s")
		var b strings.Builder
		for i := range 6 {
			fmt.Fprintf(&b, "sleep 0.2; echo done %d\n", i)
		}
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "up", "--file", writeFile(t, "up.txt", b.String()))
		waitFor(t, patience, "the 6 tasks to finish", func() bool { return setFinished(c, d.Set.ID, 6) })
		checkFinishedOnce(t, c, d.Set.ID, 6)
		served := map[string]bool{} // pilot job ids that ran a task
		for _, task := range taskCopies(c, d.Set.ID) {
			for _, cp := range task.Copies {
				if cp.State == "won" && !strings.HasPrefix(cp.Worker, "slurm-") {
					t.Errorf("task %d won on worker %q, not a pilot", task.Index, cp.Worker)
				}
				served[strings.TrimPrefix(cp.Worker, "slurm-")] = true
			}
		}
		if n := len(s.pilots("up")); n == 0 || n > 3 {
			t.Fatalf("%d pilots, want 1 to 3 (--max-pilots 3)", n)
		}
		// The cluster view lists them.
		var cl struct {
			Pilots []struct {
				ID, State, Worker string
			} `json:"pilots"`
		}
		c.ctlJSON(&cl, "cluster")
		if len(cl.Pilots) == 0 {
			t.Errorf("batchctl cluster --json lists no pilot")
		}
		// Idle for 3 s, each pilot that served leaves by itself: its job
		// completes. (A pilot still pending when the queue emptied is
		// cancelled by the pool: that one never served.)
		waitFor(t, patience, "the idle pilots to leave", func() bool {
			for _, j := range s.pilots("up") {
				if j.state != "COMPLETED" && j.state != "CANCELLED" {
					return false
				}
			}
			return true
		})
		for _, j := range s.pilots("up") {
			if served[j.id] && j.state != "COMPLETED" {
				t.Errorf("pilot %s served tasks and ended %s, want COMPLETED (left when idle)", j.id, j.state)
			}
		}
		if len(served) == 0 {
			t.Errorf("no pilot served a task")
		}
		pool.stop()
	})

	t.Run("scancel of a busy pilot loses no task and bills once", func(t *testing.T) {
		pool := startPool(t, c, "cancel", "--max-pilots", "2", "--idle", "30s")
		defer pool.stop()
		const n = 4
		file, log, gate := gatedTasks(t, n)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "cancel", "--file", file)
		// Two pilots of one slot run two tasks; the other two wait.
		var victim string
		waitFor(t, patience, "a pilot to run a task", func() bool {
			for _, task := range taskCopies(c, d.Set.ID) {
				for _, cp := range task.Copies {
					if cp.State == "running" && strings.HasPrefix(cp.Worker, "slurm-") && runs(t, log) > 0 {
						victim = strings.TrimPrefix(cp.Worker, "slurm-")
						return true
					}
				}
			}
			return false
		})
		s.run("scancel", victim)
		waitFor(t, patience, "the cancelled pilot's copy to be lost", func() bool {
			for _, task := range taskCopies(c, d.Set.ID) {
				for _, cp := range task.Copies {
					if cp.Worker == "slurm-"+victim && cp.State == "lost" {
						return true
					}
				}
			}
			return false
		})
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, patience, "every task to finish", func() bool { return setFinished(c, d.Set.ID, n) })
		checkFinishedOnce(t, c, d.Set.ID, n)
		for _, task := range taskCopies(c, d.Set.ID) {
			for _, cp := range task.Copies {
				if cp.Worker == "slurm-"+victim && cp.State == "won" {
					t.Errorf("task %d won on the cancelled pilot %s", task.Index, victim)
				}
			}
		}
	})

	t.Run("a preempted pilot hands its copies back", func(t *testing.T) {
		// Requested pilots in the preemptible partition.
		pool := startPool(t, c, "pre", "--max-pilots", "2", "--idle", "30s", "--partition", "low")
		defer pool.stop()
		const n = 2
		file, log, gate := gatedTasks(t, n)
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "pre", "--file", file)
		waitFor(t, patience, "both tasks to run on pilots in low", func() bool { return runs(t, log) >= n })
		before := map[string]bool{}
		for _, j := range s.pilots("pre") {
			if j.partition != "low" {
				t.Fatalf("pilot %s in partition %s, want low", j.id, j.partition)
			}
			if j.state == "RUNNING" {
				before[j.id] = true
			}
		}
		// A job in high that needs every CPU preempts the pilots in low.
		// With a GraceTime, Slurm signals the pilot's batch shell
		// (preempt_send_user_signal), the worker hands its copies back and
		// the pilot ends by itself, so its last state need not be
		// PREEMPTED. Preemption is what lets the high job start at all.
		high := s.run("sbatch", "--parsable", "-p", "high", "-n", "4", "-o", "/dev/null", "--wrap", "sleep 2")
		waitFor(t, patience, "the pilots to be preempted and the high job to start", func() bool {
			started := false
			for _, j := range s.jobs() {
				if j.id == high && j.state != "PENDING" {
					started = true
				}
			}
			if !started {
				return false
			}
			for _, j := range s.pilots("pre") {
				if before[j.id] && j.state != "RUNNING" && j.state != "COMPLETING" {
					return true
				}
			}
			return false
		})
		var preempted []string
		waitFor(t, patience, "the preempted pilots' copies to be handed back", func() bool {
			preempted = preempted[:0]
			for _, task := range taskCopies(c, d.Set.ID) {
				for _, cp := range task.Copies {
					if cp.State == "lost" && before[strings.TrimPrefix(cp.Worker, "slurm-")] {
						preempted = append(preempted, cp.Worker)
					}
				}
			}
			return len(preempted) > 0
		})
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, patience, "every task to finish on new pilots", func() bool { return setFinished(c, d.Set.ID, n) })
		checkFinishedOnce(t, c, d.Set.ID, n)
		for _, task := range taskCopies(c, d.Set.ID) {
			for _, cp := range task.Copies {
				if cp.State == "won" && slices.Contains(preempted, cp.Worker) {
					t.Errorf("task %d won on preempted pilot %s", task.Index, cp.Worker)
				}
			}
		}
		if runs(t, log) <= n {
			t.Errorf("%d runs for %d tasks: the preempted copies did not run again", runs(t, log), n)
		}
		waitFor(t, patience, "the high job to end", func() bool {
			for _, j := range s.jobs() {
				if j.id == high && j.state == "COMPLETED" {
					return true
				}
			}
			return false
		})
	})

	t.Run("a task on a pilot finds no token that registers a worker", func(t *testing.T) {
		pool := startPool(t, c, "steal", "--max-pilots", "1", "--idle", "3s")
		defer pool.stop()
		var d jsonDisclose
		c.ctlJSON(&d, "disclose", "--request", "--name", "steal", "--", "sh", "-c", stealTokens)
		waitFor(t, patience, "the thief task to finish", func() bool { return setFinished(c, d.Set.ID, 1) })
		var out jsonOutput
		c.ctlJSON(&out, "output", fmt.Sprintf("%d/0", d.Set.ID))
		found := strings.Fields(out.Stdout)
		pilot := out.Worker
		t.Logf("the task on %s found %d token(s)", pilot, len(found))
		var cl struct {
			Workers []struct {
				ID, Isolation string
			} `json:"workers"`
		}
		c.ctlJSON(&cl, "cluster")
		isolated := false
		for _, w := range cl.Workers {
			if w.ID == pilot {
				isolated = w.Isolation != "" && w.Isolation != "none"
			}
		}
		for i, tok := range found {
			if tok == c.workerToken() {
				t.Errorf("the task found the pool's own worker token")
			}
			wc := batchv1connect.NewWorkerServiceClient(http.DefaultClient, c.url(),
				connect.WithInterceptors(client.BearerInterceptor(tok)))
			names := []string{fmt.Sprintf("thief-%d", i)}
			if isolated {
				// A task its worker isolates must not even find its own
				// pilot's token.
				names = append(names, pilot)
			}
			for _, name := range names {
				_, err := wc.Register(t.Context(), &batchv1.RegisterRequest{Name: name, Slots: 1, Isolation: "namespaces"})
				if err == nil {
					t.Errorf("a token the task found (%s…) registered worker %q", tok[:6], name)
				}
			}
			if _, err := wc.ReportPilots(t.Context(), &batchv1.ReportPilotsRequest{Pool: "thief"}); err == nil {
				t.Errorf("a token the task found (%s…) reported a pool", tok[:6])
			}
		}
		if !isolated {
			t.Logf("pilot %s runs tasks without isolation: a task there can read its worker's memory, so the pilot's own token "+
				"is not checked against its own name; it stops working when the pilot ends", pilot)
		}
		// Once the pilot has ended and the pool has said so, no token the
		// task found works at all.
		waitFor(t, patience, "the pilot to leave", func() bool {
			for _, j := range s.pilots("steal") {
				if "slurm-"+j.id == pilot && j.state != "COMPLETED" && j.state != "CANCELLED" {
					return false
				}
			}
			return true
		})
		for _, tok := range found {
			wc := batchv1connect.NewWorkerServiceClient(http.DefaultClient, c.url(),
				connect.WithInterceptors(client.BearerInterceptor(tok)))
			waitFor(t, patience, "the ended pilot's token to be refused", func() bool {
				_, err := wc.Register(t.Context(), &batchv1.RegisterRequest{Name: pilot, Slots: 1, Isolation: "namespaces"})
				return connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodePermissionDenied
			})
		}
	})
}

// stealTokens is a task that looks for worker tokens where a task on a
// pilot could: its environment, the environment and working directory of
// each of its ancestors (the worker, the pilot script, slurmstepd), and
// the files of its working directory and of each directory above it. It
// prints each distinct token it finds.
const stealTokens = `
find() { grep -aoE 'bdp?_[a-z2-7]{32}' "$@" 2>/dev/null; }
{
  env | find
  p=$$
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | find
    cwd=$(readlink /proc/$p/cwd 2>/dev/null)
    if [ -n "$cwd" ]; then for f in "$cwd"/* "$cwd"/.*; do [ -f "$f" ] && find "$f"; done; fi
    p=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
  done
  d=$PWD
  while :; do
    for f in "$d"/* "$d"/.*; do [ -f "$f" ] && find "$f"; done
    [ "$d" = / ] && break
    d=$(dirname "$d")
  done
} | sort -u
exit 0
`
