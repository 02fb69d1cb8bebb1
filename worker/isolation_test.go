//go:build linux

package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	batchv1 "batchd/proto/batch/v1"
)

// A copy's environment is built from an allow-list: nothing else of the
// worker's environment reaches it, and no token, even one Config.Env
// names.
func TestBaseEnv(t *testing.T) {
	t.Parallel()
	inherited := []string{"PATH=/p", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "HOME=/root", "SECRET=s",
		"BATCH_WORKER_TOKEN=w", "BATCH_TOKEN=u", "BATCHD_DATA=/var/lib/batchd", "AWS_SECRET_ACCESS_KEY=k"}
	extra := []string{"BATCH_TOKEN=u2", "SITE=x"}
	got := baseEnv(inherited, extra)
	want := []string{"PATH=/p", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "SITE=x"}
	if !slices.Equal(got, want) {
		t.Errorf("baseEnv = %q, want %q", got, want)
	}
	if got := baseEnv(nil, nil); !slices.Equal(got, []string{"PATH=" + defaultPath}) {
		t.Errorf("baseEnv of nothing = %q, want a default PATH", got)
	}
}

// The copy sees its own environment, not the worker's: HOME is its
// scratch directory, and a variable of the worker's environment is not
// there.
func TestTaskEnvironmentFromScratch(t *testing.T) {
	t.Setenv("BATCHD_TEST_WORKER_SECRET", "leaked")
	t.Setenv("BATCH_WORKER_TOKEN", "bd_worker_leaked")
	b := setup(t, nil)
	b.srv.startCopy(1, 0, sh(`env`))
	r := b.srv.report(1)
	env := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	for _, kv := range env {
		if strings.Contains(kv, "leaked") {
			t.Errorf("the copy saw the worker's %q", kv)
		}
	}
	var home string
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = h
		}
	}
	if home == "" || !strings.HasPrefix(home, b.a.scratchRoot) {
		t.Errorf("HOME = %q, want the copy's scratch directory under %s", home, b.a.scratchRoot)
	}
}

// mechanisms are the isolation mechanisms this machine can test.
func mechanisms(t *testing.T) []Isolation {
	var ms []Isolation
	if os.Geteuid() == 0 {
		ms = append(ms, IsolationUID)
	}
	if err := probeNamespaces(); err == nil {
		ms = append(ms, IsolationNamespaces)
	} else {
		t.Logf("namespaces not tested: %v", err)
	}
	if len(ms) == 0 {
		t.Skip("neither root nor user namespaces here: no isolation to test")
	}
	return ms
}

// An isolated copy runs in its own scratch directory, as a uid not the
// worker's (uid) or in namespaces that hide the worker's state and the
// directories named in Config.Hide and show only its own processes; it
// writes its progress and the worker reads it; its CPU time is counted.
func TestIsolatedCopy(t *testing.T) {
	t.Parallel()
	for _, mech := range mechanisms(t) {
		t.Run(string(mech), func(t *testing.T) {
			t.Parallel()
			secret := t.TempDir()
			if err := os.WriteFile(filepath.Join(secret, "token"), []byte("bd_secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			b := setupWith(t, nil, func(c *Config) {
				c.Isolation = mech
				c.Hide = []string{secret}
				c.SlotUIDs = UIDRange{First: 61000, Count: 8}
				if mech == IsolationNamespaces {
					c.SlotUIDs.First = 61050
				}
			})
			state := b.a.stateDir
			b.srv.startCopy(1, 0, sh(`echo "uid $(id -u)"; echo "pwd $(pwd)"; `+
				`cat `+secret+`/token 2>/dev/null && echo "read secret"; `+
				`ls `+state+` 2>/dev/null | grep -q . && echo "listed state"; `+
				`echo "procs $(ls /proc | grep -c '^[0-9]')"; `+
				`echo 0.5 >> "$BATCH_PROGRESS_FILE" && echo "progress written"; `+
				`i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done`))
			r := b.srv.report(1)
			out := string(r.Stdout)
			if r.ExitCode != 0 || !strings.Contains(out, "done") {
				t.Fatalf("copy exit %d, stdout %q, stderr %q, start error %q", r.ExitCode, out, r.Stderr, r.StartError)
			}
			for _, bad := range []string{"read secret", "listed state", "bd_secret"} {
				if strings.Contains(out, bad) {
					t.Errorf("%s: the copy could: %s\n%s", mech, bad, out)
				}
			}
			if !strings.Contains(out, "progress written") || !strings.Contains(out, "pwd "+b.a.scratchRoot) {
				t.Errorf("%s: the copy cannot write its progress or is not in its scratch directory:\n%s", mech, out)
			}
			if strings.Contains(out, "uid "+strconv.Itoa(os.Getuid())+"\n") && os.Getuid() == 0 {
				t.Errorf("%s: a root worker's copy runs as root:\n%s", mech, out)
			}
			if mech == IsolationNamespaces {
				if n := procsLine(out); n < 1 || n > 4 {
					t.Errorf("namespaces: the copy sees %d processes in /proc, want its own only:\n%s", n, out)
				}
			}
			if r.CpuSeconds <= 0 {
				t.Errorf("%s: CPU seconds %v, want the loop's", mech, r.CpuSeconds)
			}
		})
	}
}

func procsLine(out string) int {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "procs "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// A fork bomb takes down its own copy, not the worker: the copy cannot
// hold more than MaxProcs processes, and the worker runs the next copy.
func TestForkBombBounded(t *testing.T) {
	t.Parallel()
	for _, mech := range mechanisms(t) {
		t.Run(string(mech), func(t *testing.T) {
			t.Parallel()
			const limit = 24
			b := setupWith(t, nil, func(c *Config) {
				c.Isolation = mech
				c.MaxProcs = limit
				c.SlotUIDs = UIDRange{First: 61100, Count: 8}
				if mech == IsolationNamespaces {
					c.SlotUIDs.First = 61150
				}
			})
			// Counts the sleeps it manages to start, then the real bomb,
			// which the timeout ends.
			// (A shell whose fork fails exits: the inner one says how far
			// it got.)
			count := sh(`sh -c 'i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); echo "started $i"; done' 2>/dev/null; echo end`)
			b.srv.startCopy(1, 0, count)
			r := b.srv.report(1)
			var started int
			for _, l := range strings.Split(string(r.Stdout), "\n") {
				if v, ok := strings.CutPrefix(l, "started "); ok {
					started, _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
			if started == 0 || started >= limit {
				t.Errorf("%s: the copy started %d processes with a limit of %d (exit %d, stdout %.300q, stderr %.200q, start error %q)", mech, started, limit, r.ExitCode, r.Stdout, r.Stderr, r.StartError)
			}
			bomb := sh(`b() { b | b & }; b; sleep 60`)
			bomb.TimeoutSeconds = 3
			b.srv.startCopy(2, 0, bomb)
			if r := b.srv.report(2); !r.TimedOut && r.ExitCode == 0 {
				t.Errorf("%s: the bomb's copy ended well: %+v", mech, r)
			}
			b.srv.startCopy(3, 1, sh(`echo alive`))
			if r := b.srv.report(3); strings.TrimSpace(string(r.Stdout)) != "alive" {
				t.Errorf("%s: the copy after the bomb: %v", mech, r)
			}
		})
	}
}

// Suspend and resume reach a namespaced copy (process 1 of its PID
// namespace): SIGSTOP and SIGCONT from the worker are never ignored.
func TestNamespacedSuspend(t *testing.T) {
	t.Parallel()
	if err := probeNamespaces(); err != nil {
		t.Skip("no user namespaces here:", err)
	}
	b := setupWith(t, nil, func(c *Config) { c.Isolation = IsolationNamespaces; c.SlotUIDs = UIDRange{First: 61200, Count: 8} })
	b.srv.startCopy(1, 0, sh(`sleep 60`))
	var pgid int
	b.srv.waitFor("copy running", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		c := b.a.copies[1]
		if c != nil && c.state == copyRunning {
			pgid = c.pgid
		}
		return pgid > 0
	})
	state := func() byte {
		st, err := readProcStat(pgid)
		if err != nil {
			t.Fatal(err)
		}
		return st.State
	}
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 1}})
	b.srv.waitFor("stopped", func() bool { return state() == 'T' })
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: 1}})
	b.srv.waitFor("running again", func() bool { return state() != 'T' })
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: 1}})
	if r := b.srv.report(1); !r.Killed || r.ExitCode != 128+int32(syscall.SIGKILL) {
		t.Errorf("killed copy reported %+v", r)
	}
}

// The token comes from a descriptor or from a 0600 file, which is removed
// when asked; a file others may read is refused.
func TestTokenHandoff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tok")
	if err := os.WriteFile(path, []byte("bd_worker_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := TokenFromFile(path, true); err != nil || tok != "bd_worker_x" {
		t.Fatalf("TokenFromFile = %q, %v", tok, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the token file is still there after reading with remove: %v", err)
	}
	if err := os.WriteFile(path, []byte("bd_worker_y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := TokenFromFile(path, false); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("a world-readable token file: err %v, want a refusal naming 0600", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write([]byte("bd_worker_z")); w.Close() }()
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if tok, err := TokenFromFD(fd); err != nil || tok != "bd_worker_z" {
		t.Errorf("TokenFromFD = %q, %v", tok, err)
	}
	if _, err := TokenFromFD(fd); err == nil {
		t.Errorf("the descriptor is still open after reading the token")
	}
}

// markerPids lists the processes whose command line holds marker.
func markerPids(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// An isolated copy dies with its agent (SIGKILL), as an unisolated one
// does (TestCopiesDieWithAgent): through the namespace init too, and
// with what it forked (process 1 of its PID namespace took it along).
func TestIsolatedCopiesDieWithAgent(t *testing.T) {
	t.Parallel()
	for _, mech := range mechanisms(t) {
		t.Run(string(mech), func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t)
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "BATCHD_TEST_AGENT="+srv.url(), "BATCHD_TEST_STATE="+dir, "BATCHD_TEST_ISOLATION="+string(mech))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); reapState(t, dir) }()
			srv.waitFor("stream open", func() bool { return srv.streams > 0 })
			marker := "die-with-agent-" + string(mech) + "-" + strconv.Itoa(os.Getpid())
			srv.startCopy(1, 0, &batchv1.TaskSpec{Argv: []string{"sh", "-c", "sleep 1000 & sleep 1000; :", marker}})
			srv.waitFor("the copy running", func() bool { return len(markerPids(marker)) == 1 })
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			eventually(t, "copy gone with the agent", func() bool { return len(markerPids(marker)) == 0 })
		})
	}
}

// With cgroup v2 (and a cgroup the worker may write, as root), each copy
// runs in a cgroup of its own whose pids.max, memory.max and cpu.max say
// what the task asked for. Skipped where /sys/fs/cgroup is not v2.
func TestCgroupV2Limits(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		t.Skip("no cgroup v2 hierarchy at /sys/fs/cgroup (this machine has v1 or none): the v2 path is not tested here")
	}
	b := setupWith(t, nil, func(c *Config) { c.MaxProcs = 77 })
	if b.a.sandbox.cg == nil || !b.a.sandbox.cg.v2 {
		t.Skipf("cgroup v2 is there but not writable by this worker: %s", b.a.limitsWhy)
	}
	spec := sh(`cg=$(cut -d: -f3 /proc/self/cgroup); d=/sys/fs/cgroup$cg; echo "$(cat $d/pids.max) $(cat $d/memory.max) $(cat $d/cpu.max)"`)
	spec.MemoryMb, spec.Cpus = 64, 2
	b.srv.startCopy(1, 0, spec)
	r := b.srv.report(1)
	want := "77 67108864 200000 100000"
	if got := strings.TrimSpace(string(r.Stdout)); got != want {
		t.Errorf("the copy's cgroup says %q, want %q (stderr %q)", got, want, r.Stderr)
	}
}

// With cgroup v1 as root, the copy is born in its slot's cgroups (forked
// by the slot's own thread, which lives in its pids cgroup and joins the
// memory one for the fork), which hold what the task asked for; a copy
// that asks for no memory is not moved into a memory cgroup. Skipped
// without a writable v1 hierarchy.
func TestCgroupV1Limits(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) { c.MaxProcs = 77 })
	cg := b.a.sandbox.cg
	if cg == nil || cg.v2 || !slices.Contains(cg.ctrls, "memory") || !slices.Contains(cg.ctrls, "pids") {
		t.Skip("no writable cgroup v1 pids and memory hierarchies here")
	}
	spec := sh(`for c in pids memory; do echo "$c $(grep ":$c[:,]" /proc/self/cgroup | cut -d: -f3)"; done; ` +
		`d=/sys/fs/cgroup; echo "$(cat $d/pids$(grep ':pids:' /proc/self/cgroup | cut -d: -f3)/pids.max) $(cat $d/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)/memory.limit_in_bytes)"`)
	spec.MemoryMb = 64
	b.srv.startCopy(1, 0, spec)
	r := b.srv.report(1)
	out := string(r.Stdout)
	// 77 processes of the copy's, and the slot's forking thread.
	slot := func(c string) string { return c + " " + "/" } // a line: the hierarchy, then its path
	inSlot := func(c string) bool {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, slot(c)) && strings.Contains(line, "/"+filepath.Base(cg.dirs[c])+"/slot-") {
				return true
			}
		}
		return false
	}
	if !strings.Contains(out, "78 67108864") || !inSlot("pids") || !inSlot("memory") {
		t.Errorf("the copy's cgroups: %q, want its slot's pids and memory cgroups with pids.max 77+1 and a 64 MiB memory limit (stderr %q)", out, r.Stderr)
	}
	// No memory asked: the copy stays in the worker's memory cgroup.
	b.srv.startCopy(2, 0, sh(`grep ":memory:" /proc/self/cgroup | cut -d: -f3`))
	r = b.srv.report(2)
	if got := strings.TrimSpace(string(r.Stdout)); strings.Contains(got, "/slot-") {
		t.Errorf("a copy that asked for no memory is in memory cgroup %q, want the worker's", got)
	}
	// This agent's threads all left its memory cgroups (the forking
	// thread joins them only for a fork); in the pids hierarchy only the
	// slot's forking thread is in one of its slots' cgroups. (Agents of
	// other tests run in this process too, with cgroups of their own.)
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	inPids := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.Contains(line, ":memory:") && strings.Contains(line, "/"+filepath.Base(cg.dirs["memory"])+"/"):
				t.Errorf("thread %s of the agent is left in a copy's memory cgroup: %s", f, line)
			case strings.Contains(line, ":pids:") && strings.Contains(line, "/"+filepath.Base(cg.dirs["pids"])+"/slot-"):
				inPids++
			}
		}
	}
	if inPids > 1 {
		t.Errorf("%d threads of the agent in slots' pids cgroups, want at most the one slot's forker", inPids)
	}
}
