package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"batchd/internal/freelist"
	batchv1 "batchd/proto/batch/v1"
)

// copyState is where a copy stands on the worker.
type copyState int

const (
	// copyStarting: accepted, process not started yet.
	copyStarting copyState = iota
	// copyRunning: the process group runs.
	copyRunning
	// copySuspended: the process group is stopped (SIGSTOP).
	copySuspended
	// copyEnded: the leader exited and the group was killed; the result is
	// held until the server answers ReportFinished.
	copyEnded
)

// Exit codes reported for copies that did not exit by themselves.
const (
	exitStartError = 127 // the command could not be started (like sh)
	exitTimedOut   = 124 // killed at spec.timeout_seconds (like timeout(1))
)

// copyRun is one copy on this worker. Fields below mu are guarded by the
// agent's mutex; the rest are set before the copy is published.
type copyRun struct {
	// niceThread: the forking thread could not get its nice value back
	// (Config.Nice without the privilege to lower it again), or could not
	// leave the copy's cgroup (v1): it must end, not serve the runtime.
	niceThread bool
	// locked: execute forked on this goroutine's thread, locked to it:
	// Pdeathsig is bound to the forking thread, so the goroutine keeps it
	// until the child is reaped and the runtime cannot retire the thread
	// (and kill the copy) while it lives. Not set when an index's own
	// forking thread forked the copy (forker_linux.go).
	locked bool
	// unlocked: execute let go of the forking thread once the copy was
	// reaped.
	unlocked bool
	id       int64
	start    *batchv1.StartCopy
	keepCap  int64 // bytes of kept files (keep.go)
	// live holds the copy's output as it comes (live.go).
	live *liveOutput

	// wake pokes the copy's monitor (state changed). Buffered, never closed.
	wake chan struct{}

	// Guarded by agent.mu.
	slot      int32 // the server's slot for it: its start's, or its last resume's
	state     copyState
	pgid      int       // process group id (= leader pid) once started
	startedAt time.Time // when the copy took its slot
	runSince  time.Time // when it last started running (valid while copyRunning)
	runAccum  time.Duration
	killed    bool // killed on the server's order (or on shutdown)
	suspendAt bool // a suspend order came before the process started
	// leaseStopped: the process group is stopped (SIGSTOP) because the
	// worker's lease ended (lease.go), whatever state the server knows.
	leaseStopped bool
	timedOut     bool
	// signal is the signal the leader died of, 0 if none (set by the
	// copy's own goroutine before finish; read only there).
	signal syscall.Signal
	// awaitingStop: in HandBack mode the copy failed and its result waits
	// (handBackWait) for the worker's stop before it counts.
	awaitingStop bool
	progress     float64 // last parsed progress, -1 when none
	cpu          float64 // last CPU seconds seen
	result       *batchv1.ReportFinishedRequest
	scratch      string // the copy's directory: progress file, default working dir ("" before it starts)
	scratchIndex int    // the sandbox index the copy ran at, -1 none (scratchDirs.give)
}

// runTime is the wall time the copy held its slot, excluding suspension.
// Call with agent.mu held.
func (c *copyRun) runTime(now time.Time) time.Duration {
	d := c.runAccum
	if c.runs() {
		d += now.Sub(c.runSince)
	}
	return d
}

// runs says whether the process group runs (neither suspended by the
// server nor stopped for a lapsed lease). Call with agent.mu held.
func (c *copyRun) runs() bool { return c.state == copyRunning && !c.leaseStopped }

// poke wakes the copy's monitor without blocking.
func (c *copyRun) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// capBuffer keeps the first cap bytes written to it and counts the rest.
type capBuffer struct {
	cap       int64
	buf       bytes.Buffer
	truncated bool
}

// Write keeps what fits under the cap and drops the rest, never failing, so
// the reader keeps draining the pipe and the child never blocks on it.
func (b *capBuffer) Write(p []byte) (int, error) {
	room := b.cap - int64(b.buf.Len())
	if room <= 0 {
		if len(p) > 0 {
			b.truncated = true
		}
		return len(p), nil
	}
	if int64(len(p)) > room {
		b.buf.Write(p[:room])
		b.truncated = true
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

// runCopy starts the copy's process, supervises it until it ends, and
// delivers its result. It runs on its own goroutine, one per copy.
func (a *agent) runCopy(c *copyRun) {
	res := a.execute(c)
	c.live.close()
	if c.niceThread {
		// The thread kept the copies' nice value (setting it back needs a
		// privilege): this goroutine ends locked, which ends the thread,
		// rather than hand the runtime a thread of low priority.
		go a.finish(c, res)
		return
	}
	if c.locked && !c.unlocked {
		runtime.UnlockOSThread()
	}
	a.finish(c, res)
}

// execute starts and supervises the process and returns its result. A
// command that cannot start gives a result with start_error and exit 127.
func (a *agent) execute(c *copyRun) *batchv1.ReportFinishedRequest {
	spec := c.start.GetSpec()
	res := &batchv1.ReportFinishedRequest{CopyId: c.id}
	fail := func(err error) *batchv1.ReportFinishedRequest {
		res.StartError = err.Error()
		res.ExitCode = exitStartError
		res.EndedAt = timestamppb.New(a.now())
		return res
	}
	if len(spec.GetArgv()) == 0 || spec.GetArgv()[0] == "" {
		return fail(errors.New("empty argv"))
	}
	if a.noExec { // benchmarks only (Config.BenchNoExec): a `true` without the fork
		res.EndedAt = timestamppb.New(a.now())
		return res
	}
	if owner := c.start.GetOwner(); a.boundUser != "" && owner != "" && owner != a.boundUser {
		// The server should not send it; a worker bound to one user runs
		// nobody else's task whatever it is sent.
		return fail(fmt.Errorf("this worker runs only %s's tasks, not %s's", a.boundUser, owner))
	}
	scratch, near, err := a.scratch.take()
	if err != nil {
		return fail(fmt.Errorf("scratch dir: %w", err))
	}
	a.mu.Lock()
	c.scratch = scratch
	a.mu.Unlock()
	progressPath := filepath.Join(c.scratch, "progress")

	cmd := a.paths.command(a.now(), spec.Argv)
	cmd.Dir = c.scratch
	if spec.GetDir() != "" {
		cmd.Dir = spec.GetDir()
	}
	env := append(append([]string(nil), a.env...), "HOME="+c.scratch)
	if a.isolation == IsolationUID || a.isolation == IsolationOwnerUID {
		// A /tmp of its own (under namespaces /tmp is private already).
		env = append(env, "TMPDIR="+c.scratch)
	}
	keys := make([]string, 0, len(spec.GetEnv()))
	for k := range spec.GetEnv() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+spec.Env[k])
	}
	env = append(env,
		"BATCH_TASK_SET="+strconv.FormatInt(c.start.GetSetId(), 10),
		"BATCH_TASK_INDEX="+strconv.Itoa(int(c.start.GetIndex())),
		// 1 for the first attempt; a server from before retries sends none.
		"BATCH_TASK_ATTEMPT="+strconv.Itoa(int(max(1, c.start.GetAttempt()))),
		"BATCH_COPY_ID="+strconv.FormatInt(c.id, 10),
		"BATCH_PROGRESS_FILE="+progressPath,
	)
	gpuEnv, err := a.gpuEnv(c.id, spec.GetGpus())
	if err != nil {
		return fail(err)
	}
	env = append(env, gpuEnv...)
	cmd.Env = env // exec keeps the last value of a repeated key
	var box *prepared
	if cmd.Err == nil {
		if box, err = a.sandbox.prepareNear(cmd, c.start.GetOwner(), c.scratch, near); err != nil {
			return fail(err)
		}
		a.mu.Lock()
		c.scratchIndex = box.index
		a.mu.Unlock()
	}
	// done gives back what prepare took, once the copy is reaped.
	done := func() {
		if box != nil {
			a.sandbox.done(box)
		}
	}
	if f := devNull(); f != nil {
		cmd.Stdin = f
	}

	outR, outW, err := outputPipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := outputPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fail(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	a.mu.Lock()
	killed := c.killed
	a.mu.Unlock()
	if killed { // killed before it could start
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		done()
		res.Killed = true
		res.ExitCode = 128 + int32(syscall.SIGKILL)
		res.EndedAt = timestamppb.New(a.now())
		return res
	}
	// The copy's clock runs from just before the fork to the wait: the
	// fork and exec are part of the slot time it costs. The fork runs
	// without a.mu (other copies fork, heartbeats and orders go on); an
	// order that came meanwhile is carried out right after.
	now := a.now()
	fork := func() (fit bool) {
		restore := func() bool { return true }
		if a.nice > 0 {
			// The child inherits the nice value of the thread that forks
			// it: it runs niced from its first instruction. Failing to
			// renice is not worth failing the copy.
			restore, _ = niceThread(a.nice)
		}
		stuck := false
		if box != nil {
			stuck, err = a.sandbox.start(cmd, box, limits{procs: a.maxProcs, memoryMB: spec.GetMemoryMb(), cpus: spec.GetCpus()})
		} else {
			err = cmd.Start() // reports cmd.Err
		}
		return restore() && !stuck
	}
	if box != nil && a.sandbox.hasForker(box) {
		if ferr := a.sandbox.cg.onForker(box.index, fork); ferr != nil {
			err = ferr
		}
	} else {
		runtime.LockOSThread()
		c.locked = true
		if !fork() {
			// The thread keeps a nice value or a cgroup of a copy's: it
			// ends with this goroutine instead of serving the runtime
			// again.
			c.niceThread = true
		}
	}
	a.mu.Lock()
	if err == nil {
		c.pgid = cmd.Process.Pid
		c.state = copyRunning
		c.startedAt, c.runSince = now, now
		if a.leaseLapsed && !c.killed {
			c.leaseStopped = true // started from an order sent before the lapse
		}
		switch {
		case c.killed:
			_ = signalGroup(c.pgid, syscall.SIGKILL)
		case c.suspendAt || c.leaseStopped:
			if serr := signalGroup(c.pgid, syscall.SIGSTOP); serr == nil {
				if c.suspendAt {
					c.state = copySuspended
				}
				c.runAccum += a.now().Sub(c.runSince)
			} else {
				c.leaseStopped = false
			}
		}
	}
	a.mu.Unlock()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		done()
		return fail(startError(err, spec.GetDir()))
	}

	// The last of the two readers to end closes readersDone.
	readersDone := make(chan struct{})
	var readersLeft atomic.Int32
	readersLeft.Store(2)
	read := func(w io.Writer, r io.Reader) {
		copyOut(w, r)
		if readersLeft.Add(-1) == 0 {
			close(readersDone)
		}
	}
	go read(c.live.stream(0), outR)
	go read(c.live.stream(1), errR)

	mon := a.startMonitor(c, progressPath)

	// Wait for the leader to exit without reaping it, kill whatever is
	// left of its group while the group id is still pinned, then reap.
	waitErr := waitExited(c.pgid)
	a.mu.Lock()
	end := a.now()
	if c.runs() {
		c.runAccum += end.Sub(c.runSince)
	}
	_ = signalGroup(c.pgid, syscall.SIGKILL)
	if c.state == copySuspended || c.leaseStopped {
		// A stopped group member ignores nothing but SIGKILL; SIGCONT too so
		// nothing is left stopped if the kill raced a fork.
		_ = signalGroup(c.pgid, syscall.SIGCONT)
	}
	c.state = copyEnded
	killed, timedOut, runTime, liveCPU := c.killed, c.timedOut, c.runAccum, c.cpu
	a.mu.Unlock()
	if waitErr != nil {
		a.log.Warn("waitid failed; reaping directly", "copy", c.id, "err", waitErr)
	}
	_ = cmd.Wait() // reaps the leader; its exit status is read below
	keep := len(spec.GetKeep()) > 0 && !killed
	keepUID := box.copyUID()
	if keep && keepUID >= 0 {
		// done hands the copy's uid to the next copy, which must not
		// reach into this scratch directory while it is collected.
		if err := lockScratch(c.scratch); err != nil {
			a.log.Warn("locking the scratch dir before collecting kept files", "copy", c.id, "err", err)
		}
	}
	done()
	if c.locked && !c.niceThread {
		// Reaped: the thread no longer matters to the copy. What is left
		// (the monitor and the pipes' readers ending) runs unlocked: a
		// locked goroutine that waits on a channel parks its thread and
		// needs that very thread woken again.
		runtime.UnlockOSThread()
		c.unlocked = true
	}
	mon.stop()

	// The group is dead; a process that left the group (setsid) may still
	// hold the pipes: give it a moment, then stop reading.
	select {
	case <-readersDone:
	default:
		t := time.NewTimer(2 * time.Second)
		select {
		case <-readersDone:
		case <-t.C:
			outR.Close()
			errR.Close()
			<-readersDone
		}
		t.Stop()
	}
	outR.Close()
	errR.Close()

	ps := cmd.ProcessState
	cpu := liveCPU
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			rc := tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
			if rc > cpu {
				cpu = rc
			}
		}
	}
	res.ExitCode, res.Signal = exitCode(ps), exitSignal(ps)
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			c.signal = ws.Signal()
		}
	}
	res.Killed = killed
	res.TimedOut = timedOut && !killed
	if res.TimedOut {
		res.ExitCode = exitTimedOut
	}
	res.Stdout, res.Stderr, res.StdoutTruncated, res.StderrTruncated = c.live.result()
	res.CpuSeconds = cpu
	res.RunSeconds = runTime.Seconds()
	res.EndedAt = timestamppb.New(end)
	if keep {
		// After the pipes: what was left of the group is dead and reaped.
		res.Kept = collectKept(c.scratch, spec.GetKeep(), keepRules{cap: c.keepCap, uid: keepUID})
	}
	return res
}

// copyBufs are the buffers that drain copies' pipes: a copy of `true`
// should not cost 64 KiB of garbage. A free list, not a sync.Pool: the
// collector emptied the pool so often under load that a quarter of the
// copies made new buffers (8 MB of 168 the server allocated for 4,000
// copies at 64 slots). It keeps what 64 running copies use, 4 MB at most.
var copyBufs = freelist.List[*[]byte]{Max: 128, New: func() *[]byte { b := make([]byte, 32<<10); return &b }}

// copyOut drains r into w with a pooled buffer. (Not io.CopyBuffer: an
// *os.File is a WriterTo, so CopyBuffer would not use the buffer, and the
// file's WriteTo allocated a fresh 32 KiB one for each pipe: two thirds
// of what the server allocated per copy.)
func copyOut(w io.Writer, r io.Reader) {
	bp := copyBufs.Get()
	defer copyBufs.Put(bp)
	b := *bp
	for {
		n, err := r.Read(b)
		if n > 0 {
			_, _ = w.Write(b[:n])
		}
		if err != nil {
			return
		}
	}
}

// startError explains a failed start. exec reports a working directory
// that does not exist as the command not being found ("fork/exec
// /usr/bin/true: no such file or directory"): say which it was.
func startError(err error, dir string) error {
	if dir != "" && errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("working directory %q: %w", dir, serr)
		}
	}
	return err
}

// exitCode is the exit status, or 128+signal for a copy ended by a signal
// (the shell's convention).
func exitCode(ps *os.ProcessState) int32 {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// exitSignal is the signal that ended the process, 0 when it exited.
func exitSignal(ps *os.ProcessState) int32 {
	if ps == nil {
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int32(ws.Signal())
	}
	return 0
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// copyMonitor is a copy's monitor (see monitor), started on its first
// look: a copy that ends before costs no goroutine.
type copyMonitor struct {
	t    *time.Timer
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the monitor has returned
}

// startMonitor arranges for c's monitor to start at its first look, one
// poll interval in (sooner for a shorter timeout: the timeout is checked
// at each look). A poke before then is seen at the first look.
func (a *agent) startMonitor(c *copyRun, progressPath string) *copyMonitor {
	m := &copyMonitor{quit: make(chan struct{}), done: make(chan struct{})}
	timeout := time.Duration(c.start.GetSpec().GetTimeoutSeconds() * float64(time.Second))
	first := a.poll
	if timeout > 0 && timeout < first {
		first = timeout
	}
	m.t = time.AfterFunc(first, func() {
		defer close(m.done)
		a.monitor(c, progressPath, timeout, m.quit)
	})
	return m
}

// stop ends the monitor, or keeps it from starting, and waits for it.
func (m *copyMonitor) stop() {
	if m.t.Stop() {
		return // it never started
	}
	close(m.quit)
	<-m.done
}

// monitor polls the copy's progress file and CPU time, and enforces its
// timeout (counted in run time, so suspension does not count), until done.
// Its first look is at once (startMonitor waited for it).
func (a *agent) monitor(c *copyRun, progressPath string, timeout time.Duration, done <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-c.wake:
		case <-t.C:
		}
		p, havep := readProgress(progressPath)
		a.mu.Lock()
		if c.state == copyEnded {
			a.mu.Unlock()
			return
		}
		changed := false
		if havep && p != c.progress {
			c.progress, changed = p, true
		}
		if st, err := readProcStat(c.pgid); err == nil && st.CPUSeconds > c.cpu {
			c.cpu = st.CPUSeconds
		}
		wait := a.poll
		if timeout > 0 && !c.killed && !c.timedOut {
			left := timeout - c.runTime(a.now())
			if left <= 0 {
				c.timedOut = true
				_ = signalGroup(c.pgid, syscall.SIGKILL)
				a.log.Info("copy timed out", "copy", c.id, "timeout", timeout)
			} else if c.runs() && left < wait {
				wait = left
			}
		}
		a.mu.Unlock()
		if changed {
			a.progressChanged()
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// readProgress returns the last complete line of the progress file that
// parses as a number in [0,1]. Only the file's tail is read.
func readProgress(path string) (float64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	const tail = 4096
	var off int64
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		off = fi.Size() - tail
	}
	buf := make([]byte, tail)
	n, _ := f.ReadAt(buf, off)
	b := buf[:n]
	if off > 0 {
		// The tail starts inside a line: skip that fragment.
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return 0, false
		}
		b = b[i+1:]
	}
	// Drop an incomplete last line (no newline yet): it may still grow.
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return 0, false
	}
	b = b[:i]
	for {
		j := bytes.LastIndexByte(b, '\n')
		line := bytes.TrimSpace(b[j+1:])
		if v, err := strconv.ParseFloat(string(line), 64); err == nil && v >= 0 && v <= 1 {
			return v, true
		}
		if j < 0 {
			return 0, false
		}
		b = b[:j]
	}
}
