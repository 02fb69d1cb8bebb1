package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pilotWorkerPID finds the pid of the worker process of Slurm job id: the
// `batchd worker` whose command line names slurm-ID (not the
// --kill-leftovers one).
func pilotWorkerPID(t *testing.T, id string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		var worker, named, leftovers bool
		for _, a := range args {
			switch string(a) {
			case "worker":
				worker = true
			case "slurm-" + id:
				named = true
			case "--kill-leftovers":
				leftovers = true
			}
		}
		if worker && named && !leftovers {
			return pid
		}
	}
	return 0
}

// running says whether pid is a live process (a zombie is not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestSlurmDeadWorker: a pilot's worker that dies (SIGKILL) takes its
// copies with it, what they forked too (no orphan left under init), and
// its job ends, giving its allocation back; a pilot whose worker hangs
// (SIGSTOP) is cancelled by the pool once the worker has been silent past
// the lease and a margin. The tasks run again elsewhere, billed once.
func TestSlurmDeadWorker(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none", "--lease", "5s")
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	// A task that forks a grandchild that would outlive its leader, and
	// records both pids.
	task := func(i int) string {
		return fmt.Sprintf(`sleep 1000 & echo "$! $$" >> %s/pids-$BATCH_TASK_INDEX; while [ ! -e %s ]; do sleep 0.05; done; echo "done %d"`, dir, gate, i)
	}

	for _, how := range []struct {
		name string
		sig  syscall.Signal
	}{{"killed", syscall.SIGKILL}, {"hung", syscall.SIGSTOP}} {
		t.Run(how.name, func(t *testing.T) {
			pool := startPool(t, c, "dead"+how.name, "--max-pilots", "1", "--idle", "30s")
			defer pool.stop()
			var d jsonDisclose
			c.ctlJSON(&d, "disclose", "--request", "--name", how.name, "--file", writeFile(t, how.name+".txt", task(0)+"\n"))
			pidFile := filepath.Join(dir, "pids-0")
			var pilot string
			waitFor(t, patience, "the task to run on a pilot", func() bool {
				for _, task := range taskCopies(c, d.Set.ID) {
					for _, cp := range task.Copies {
						if cp.State == "running" && strings.HasPrefix(cp.Worker, "slurm-") {
							pilot = strings.TrimPrefix(cp.Worker, "slurm-")
						}
					}
				}
				_, err := os.Stat(pidFile)
				return pilot != "" && err == nil
			})
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			var grandchild, leader int
			if _, err := fmt.Sscan(string(b), &grandchild, &leader); err != nil {
				t.Fatalf("pids %q: %v", b, err)
			}
			os.Remove(pidFile)
			wpid := pilotWorkerPID(t, pilot)
			if wpid == 0 {
				t.Fatalf("no worker process for pilot %s", pilot)
			}
			if err := syscall.Kill(wpid, how.sig); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(wpid, syscall.SIGKILL) //nolint:errcheck // a hung worker left behind
			waitFor(t, patience, "pilot "+pilot+" to end", func() bool {
				for _, j := range s.pilots("dead" + how.name) {
					if j.id == pilot {
						return j.state != "RUNNING" && j.state != "COMPLETING"
					}
				}
				return true
			})
			waitFor(t, patience, "the copy's processes to be gone", func() bool { return !running(leader) && !running(grandchild) })
			for _, j := range s.pilots("dead" + how.name) {
				if j.id == pilot {
					t.Logf("pilot %s ended %s", j.id, j.state)
					if how.sig == syscall.SIGSTOP && j.state != "CANCELLED" {
						t.Errorf("the hung worker's pilot ended %s, want CANCELLED by the pool", j.state)
					}
				}
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitFor(t, patience, "the task to finish on another pilot", func() bool { return setFinished(c, d.Set.ID, 1) })
			checkFinishedOnce(t, c, d.Set.ID, 1)
			os.Remove(gate)
		})
	}
}
