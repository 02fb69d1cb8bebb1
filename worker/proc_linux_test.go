//go:build linux

package worker

import (
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// threads is this process's number of threads.
func threads(t *testing.T) int {
	ts, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestWaitExitedHoldsNoThread waits on 32 running children at once: the
// worker's threads must not grow with its running copies (a thread
// blocked in waitid for each one did), each wait must end when its child
// dies, and the child must stay unreaped (a zombie) so that its process
// group id stays pinned until the worker reaps it.
func TestWaitExitedHoldsNoThread(t *testing.T) {
	const n = 32
	before := threads(t)
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command("sleep", "60")
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
		c := cmds[i]
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() }) // on a failure before the kills below
	}
	var waiting atomic.Int32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waiting.Add(1)
			errs[i] = waitExited(c.Process.Pid)
		}()
	}
	for waiting.Load() < n {
		time.Sleep(time.Millisecond)
	}
	// Blocked waits showed up as threads within milliseconds (the
	// runtime's monitor hands each blocked thread's processor on); give
	// them far longer than that.
	time.Sleep(300 * time.Millisecond)
	during := threads(t)
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGKILL)
	}
	wg.Wait()
	for i, c := range cmds {
		if errs[i] != nil {
			t.Errorf("waitExited(%d): %v", c.Process.Pid, errs[i])
		}
		st, err := readProcStat(c.Process.Pid)
		if err != nil {
			t.Errorf("child %d: %v (reaped by waitExited?)", c.Process.Pid, err)
		} else if st.State != 'Z' {
			t.Errorf("child %d in state %c after waitExited, want Z (exited, unreaped)", c.Process.Pid, st.State)
		}
		_ = c.Wait()
	}
	if grew := during - before; grew >= n/2 {
		t.Errorf("threads grew by %d (from %d) while waiting on %d children: a thread per wait", grew, before, n)
	}
}
