// Tests of one copy's life: start and report, output, kill, suspend,
// timeouts and progress.

package worker

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

func TestStartReport(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	spec := sh(`echo out; echo err >&2; echo "$BATCH_TASK_SET $BATCH_TASK_INDEX $BATCH_COPY_ID $FOO"; pwd; echo "$BATCH_PROGRESS_FILE"; exit 3`)
	spec.Env = map[string]string{"FOO": "bar baz"}
	b.srv.startCopy(11, 0, spec)
	r := b.srv.report(11)

	if got, want := r.WorkerId, "w-test"; got != want {
		t.Errorf("worker_id = %q, want %q", got, want)
	}
	if got, want := r.ExitCode, int32(3); got != want {
		t.Errorf("exit_code = %d, want %d", got, want)
	}
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(lines) != 4 {
		t.Fatalf("stdout = %q, want 4 lines", r.Stdout)
	}
	if got, want := lines[0], "out"; got != want {
		t.Errorf("stdout line 1 = %q, want %q", got, want)
	}
	if got, want := lines[1], "7 11 11 bar baz"; got != want {
		t.Errorf("env line = %q, want %q", got, want)
	}
	scratch := lines[2]
	if got, want := filepath.Dir(scratch), filepath.Join(b.a.stateDir, "copies"); got != want {
		t.Errorf("working dir = %q, want a directory in %q", scratch, want)
	}
	if got, want := lines[3], filepath.Join(scratch, "progress"); got != want {
		t.Errorf("BATCH_PROGRESS_FILE = %q, want %q", got, want)
	}
	if got, want := string(r.Stderr), "err\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if r.Killed || r.TimedOut || r.StdoutTruncated || r.StderrTruncated || r.StartError != "" {
		t.Errorf("unexpected flags in %v", r)
	}
	if r.RunSeconds <= 0 || r.EndedAt == nil {
		t.Errorf("run_seconds = %v, ended_at = %v", r.RunSeconds, r.EndedAt)
	}
	// Register, the stream, heartbeats and the report share one h2c
	// connection.
	b.srv.mu.Lock()
	if b.srv.conns != 1 {
		t.Errorf("%d connections, want 1", b.srv.conns)
	}
	b.srv.mu.Unlock()
	// The copy is forgotten once reported, and its scratch dir emptied:
	// the copy left nothing in it, so it is kept for the next copy.
	eventually(t, "copy forgotten", func() bool {
		b.a.mu.Lock()
		defer b.a.mu.Unlock()
		return len(b.a.copies) == 0
	})
	eventually(t, "scratch kept empty", func() bool { empty, err := emptyDir(scratch); return err == nil && empty })
	b.srv.startCopy(12, 0, sh(`pwd; echo left > file`))
	if got, want := strings.TrimSpace(string(b.srv.report(12).Stdout)), scratch; got != want {
		t.Errorf("second copy ran in %q, want the reused %q", got, want)
	}
	// A directory a copy left something in is removed, never reused.
	eventually(t, "scratch removed", func() bool { _, err := os.Stat(scratch); return os.IsNotExist(err) })
	b.srv.startCopy(13, 0, sh(`pwd; ls -A`))
	if got := strings.TrimSpace(string(b.srv.report(13).Stdout)); got == scratch || strings.Contains(got, "file") {
		t.Errorf("third copy saw %q: a directory with another copy's files", got)
	}
}

func TestSpecDir(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	spec := sh(`pwd`)
	spec.Dir = b.dir
	b.srv.startCopy(1, 0, spec)
	if got, want := strings.TrimSpace(string(b.srv.report(1).Stdout)), b.dir; got != want {
		t.Errorf("pwd = %q, want %q", got, want)
	}
}

// A copy never inherits the worker's token (nor a user token) from the
// agent's environment: with it, a task could report its worker's copies,
// another user's among them. The rest of the environment is passed on.
func TestTokensNotInherited(t *testing.T) {
	t.Parallel()
	b := setupWith(t, nil, func(c *Config) {
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "BATCH_WORKER_TOKEN=bd_worker", "BATCH_TOKEN=bd_user", "KEEP=kept"}
	})
	b.srv.startCopy(1, 0, sh(`echo "[$BATCH_WORKER_TOKEN][$BATCH_TOKEN][$KEEP]"`))
	if got, want := strings.TrimSpace(string(b.srv.report(1).Stdout)), "[][][kept]"; got != want {
		t.Errorf("task saw %q, want %q", got, want)
	}
}

// A copy runs Config.Nice nicer than the agent (so that a server sharing
// its host keeps answering while tasks fill the cores).
func TestNice(t *testing.T) {
	t.Parallel()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - raw
	for _, inc := range []int{0, 7, 19} {
		b := setupWith(t, nil, func(c *Config) { c.Nice = inc })
		b.srv.startCopy(1, 0, sh(`cut -d' ' -f19 /proc/$$/stat`))
		got := strings.TrimSpace(string(b.srv.report(1).Stdout))
		if want := strconv.Itoa(min(own+inc, 19)); got != want {
			t.Errorf("Nice %d: the copy's nice value is %q, want %s (the agent's is %d)", inc, got, want, own)
		}
	}
	// The forking threads got their own value back (or ended): no thread
	// of the agent's process runs niced.
	tasks, _ := filepath.Glob("/proc/self/task/*/stat")
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 16 && fields[16] != strconv.Itoa(own) {
			t.Errorf("thread %s runs at nice %s, the agent's is %d", f, fields[16], own)
		}
	}
	if err := Run(context.Background(), Config{Server: "http://127.0.0.1:1", Nice: 20}); err == nil || !strings.Contains(err.Error(), "nice 20") {
		t.Errorf("Run with Nice 20 = %v, want an error naming it", err)
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.srv.startCopy(1, 0, &batchv1.TaskSpec{Argv: []string{"batchd-no-such-command-here"}})
	b.srv.startCopy(2, 1, &batchv1.TaskSpec{Argv: []string{"true"}, Dir: filepath.Join(b.dir, "missing")})
	b.srv.startCopy(3, 2, &batchv1.TaskSpec{})
	for _, id := range []int64{1, 2, 3} {
		r := b.srv.report(id)
		if r.StartError == "" || r.ExitCode != 127 || r.Killed {
			t.Errorf("copy %d: start_error = %q, exit_code = %d, killed = %v; want an error, 127, false",
				id, r.StartError, r.ExitCode, r.Killed)
		}
		// A missing working directory is named as such, not as a missing
		// command (exec says "fork/exec /usr/bin/true: no such file or
		// directory" for both).
		if id == 2 && !strings.Contains(r.StartError, "working directory") {
			t.Errorf("copy 2 (missing dir): start_error = %q, want it to name the working directory", r.StartError)
		}
		if id == 1 && strings.Contains(r.StartError, "working directory") {
			t.Errorf("copy 1 (missing command): start_error = %q names a working directory", r.StartError)
		}
	}
}

// A copy's slot time runs from just before the fork to the wait, so even
// a copy of `true`, whose CPU time is mostly its exec and dynamic loading,
// is billed at least the CPU time it used (a single-threaded process uses
// no more CPU than wall time). The clock used to start once the fork had
// returned, and a copy of `true` was billed 0.09 ms of slot time for
// 0.8 ms of CPU.
func TestRunTimeCoversStart(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for id := int64(1); id <= 20; id++ {
		b.srv.startCopy(id, 0, &batchv1.TaskSpec{Argv: []string{"true"}})
		r := b.srv.report(id)
		if r.ExitCode != 0 {
			t.Fatalf("copy %d: exit %d (%s)", id, r.ExitCode, r.StartError)
		}
		if r.RunSeconds < r.CpuSeconds {
			t.Errorf("copy %d: run_seconds %.6f < cpu_seconds %.6f: the fork and exec are not in its slot time", id, r.RunSeconds, r.CpuSeconds)
		}
	}
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.outCap = 1000 })
	// 4 MiB is far beyond the pipe buffer: the child only ends if the agent
	// keeps draining past the cap.
	b.srv.startCopy(1, 0, sh(`head -c 4194304 /dev/zero; echo small >&2`))
	r := b.srv.report(1)
	if got, want := len(r.Stdout), 1000; got != want {
		t.Errorf("len(stdout) = %d, want %d", got, want)
	}
	if !r.StdoutTruncated {
		t.Error("stdout_truncated = false, want true")
	}
	if got, want := string(r.Stderr), "small\n"; got != want || r.StderrTruncated {
		t.Errorf("stderr = %q (truncated %v), want %q", got, r.StderrTruncated, want)
	}
	if r.ExitCode != 0 {
		t.Errorf("exit_code = %d, want 0", r.ExitCode)
	}
}

func TestKillProcessTree(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	pidFile := filepath.Join(b.dir, "pids")
	b.srv.startCopy(1, 0, sh(`sleep 1000 & echo $! >> `+pidFile+`; sleep 1000 & echo $! >> `+pidFile+`; echo $$ >> `+pidFile+`; wait`))
	pids := readPIDs(t, pidFile, 3)
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("pid %d not running before kill", p)
		}
	}
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: 1}})
	r := b.srv.report(1)
	if !r.Killed || r.TimedOut {
		t.Errorf("killed = %v, timed_out = %v; want true, false", r.Killed, r.TimedOut)
	}
	if got, want := r.ExitCode, int32(128+9); got != want {
		t.Errorf("exit_code = %d, want %d", got, want)
	}
	for _, p := range pids {
		eventually(t, "pid "+strconv.Itoa(p)+" gone", func() bool { return !alive(p) })
	}
}

func TestLeftoversKilledOnExit(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	pidFile := filepath.Join(b.dir, "pids")
	// The leader exits at once, leaving a background grandchild that keeps
	// stdout open: the agent must kill it and not wait for it.
	b.srv.startCopy(1, 0, sh(`sleep 1000 & echo $! > `+pidFile+`; echo done`))
	r := b.srv.report(1)
	if r.ExitCode != 0 || r.Killed || string(r.Stdout) != "done\n" {
		t.Errorf("exit_code = %d, killed = %v, stdout = %q", r.ExitCode, r.Killed, r.Stdout)
	}
	pid := readPIDs(t, pidFile, 1)[0]
	eventually(t, "grandchild gone", func() bool { return !alive(pid) })
}

func TestSuspendResume(t *testing.T) {
	t.Parallel()
	b := setup(t, func(f *fakeServer) { f.hb = 0.05 })
	pidFile := filepath.Join(b.dir, "pid")
	t0 := time.Now()
	b.srv.startCopy(1, 0, sh(`echo $$ > `+pidFile+`; while :; do :; done`))
	pid := readPIDs(t, pidFile, 1)[0]
	// Live CPU time reaches the heartbeat.
	b.srv.waitFor("cpu in heartbeat", func() bool {
		for _, h := range b.srv.heartbeats {
			for _, c := range h.Copies {
				if c.CopyId == 1 && c.CpuSeconds > 0 {
					return true
				}
			}
		}
		return false
	})

	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 1}})
	eventually(t, "state T", func() bool { st, _ := readProcStat(pid); return st.State == 'T' })
	stoppedAt := time.Now()
	before, err := readProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	// CPU time must not advance while stopped: let real time pass.
	time.Sleep(300 * time.Millisecond)
	after, err := readProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != 'T' || after.CPUSeconds != before.CPUSeconds {
		t.Errorf("while suspended: state %c, cpu %v -> %v; want T and no change", after.State, before.CPUSeconds, after.CPUSeconds)
	}
	resumedAt := time.Now()
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: 1}})
	eventually(t, "cpu advancing again", func() bool {
		st, _ := readProcStat(pid)
		return st.State != 'T' && st.CPUSeconds > after.CPUSeconds
	})
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: 1}})
	r := b.srv.report(1)
	wall := time.Since(t0)
	suspended := resumedAt.Sub(stoppedAt)
	if got, max := r.RunSeconds, (wall - suspended).Seconds(); got <= 0 || got > max {
		t.Errorf("run_seconds = %v, want in (0, %v] (wall %v minus suspended %v)", got, max, wall, suspended)
	}
	if r.CpuSeconds <= 0 || r.CpuSeconds > r.RunSeconds+0.5 {
		t.Errorf("cpu_seconds = %v with run_seconds %v", r.CpuSeconds, r.RunSeconds)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	spec := &batchv1.TaskSpec{Argv: []string{"sleep", "1000"}, TimeoutSeconds: 0.3}
	b.srv.startCopy(1, 0, spec)
	r := b.srv.report(1)
	if !r.TimedOut || r.Killed || r.ExitCode != 124 {
		t.Errorf("timed_out = %v, killed = %v, exit_code = %d; want true, false, 124", r.TimedOut, r.Killed, r.ExitCode)
	}
	if r.RunSeconds < 0.3 {
		t.Errorf("run_seconds = %v, want >= 0.3", r.RunSeconds)
	}
}

// testClock is a clock that moves only when the test says.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestTimeoutExcludesSuspension: the timeout counts run time only. A copy
// suspended for an hour past its 0.5 s timeout does not time out; resumed,
// it times out once its run time passes 0.5 s, and reports that run time.
// The agent's clock is the test's, so the machine's load changes nothing.
func TestTimeoutExcludesSuspension(t *testing.T) {
	t.Parallel()
	clk := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	// A lease of two hours: the clock's jump of an hour below must not end
	// it (the agent would stop the copy, and its run time with it).
	b := setupAgent(t, func(f *fakeServer) { f.hb, f.lease = 0.05, 7200 }, nil, func(a *agent) { a.now = clk.Now })
	pidFile := filepath.Join(b.dir, "pid")
	spec := sh(`echo $$ > ` + pidFile + `; exec sleep 1000`)
	spec.TimeoutSeconds = 0.5
	b.srv.startCopy(1, 0, spec)
	pid := readPIDs(t, pidFile, 1)[0]
	clk.Advance(200 * time.Millisecond) // run time 0.2 s
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Suspend{Suspend: 1}})
	eventually(t, "state T", func() bool { st, _ := readProcStat(pid); return st.State == 'T' })
	clk.Advance(time.Hour)
	// Give the agent's monitor (20 ms polls) time to look at the new clock:
	// a few heartbeats go by meanwhile.
	b.srv.mu.Lock()
	n := len(b.srv.heartbeats)
	b.srv.mu.Unlock()
	b.srv.waitFor("heartbeats while suspended", func() bool { return len(b.srv.heartbeats) >= n+3 })
	if n := b.srv.reportCount(1); n != 0 {
		t.Fatalf("copy reported while suspended (%d reports)", n)
	}
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Resume{Resume: 1}})
	eventually(t, "running again", func() bool { st, _ := readProcStat(pid); return st.State != 'T' })
	clk.Advance(time.Second) // run time 1.2 s: past the timeout
	r := b.srv.report(1)
	if !r.TimedOut || r.ExitCode != 124 {
		t.Errorf("timed_out = %v, exit_code = %d; want true, 124", r.TimedOut, r.ExitCode)
	}
	if got, want := r.RunSeconds, 1.2; math.Abs(got-want) > 1e-6 {
		t.Errorf("run_seconds = %v, want %v (0.2 s before the suspension, 1 s after)", got, want)
	}
}

func TestProgressReachesHeartbeat(t *testing.T) {
	t.Parallel()
	// Heartbeats every minute: only a progress change can send one soon.
	b := setup(t, func(f *fakeServer) { f.hb = 60 })
	gate := filepath.Join(b.dir, "go")
	b.srv.startCopy(1, 0, sh(`echo 0.25 >> "$BATCH_PROGRESS_FILE"; while [ ! -e `+gate+` ]; do sleep 0.02; done; `+
		`printf 'junk\n0.5\n2\n0.7' >> "$BATCH_PROGRESS_FILE"; while :; do sleep 1; done`))
	progressSeen := func(p float64) func() bool {
		return func() bool {
			for _, h := range b.srv.heartbeats {
				for _, c := range h.Copies {
					if c.CopyId == 1 && c.Progress == p {
						return true
					}
				}
			}
			return false
		}
	}
	b.srv.waitFor("progress 0.25", progressSeen(0.25))
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// "2" is out of range and "0.7" has no newline yet: 0.5 is the answer.
	b.srv.waitFor("progress 0.5", progressSeen(0.5))
	b.srv.send(&batchv1.AssignmentsResponse{Action: &batchv1.AssignmentsResponse_Kill{Kill: 1}})
	b.srv.report(1)
}

func TestReadProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("x", 5000) + "\n0.9\n"
	for _, tc := range []struct {
		name, content string
		want          float64
		ok            bool
	}{
		{"Empty", "", 0, false},
		{"OneLine", "0.5\n", 0.5, true},
		{"Last", "0.1\n0.2\n", 0.2, true},
		{"Incomplete", "0.1\n0.2", 0.1, true},
		{"OnlyIncomplete", "0.3", 0, false},
		{"Garbage", "0.4\nhello\n", 0.4, true},
		{"OutOfRange", "0.4\n1.5\n-0.1\n", 0.4, true},
		{"Spaces", "  1  \n", 1, true},
		{"LongTail", long, 0.9, true},
		{"LongLine", strings.Repeat("1", 5000) + "\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, ok := readProgress(p)
			if got != tc.want || ok != tc.ok {
				t.Errorf("readProgress = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := readProgress(filepath.Join(dir, "missing")); ok {
		t.Error("missing file gave progress")
	}
}
