//go:build linux

package worker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestIsolationStartCost measures what one copy start costs with each
// mechanism, alternated, BATCHD_MEASURE_STARTS starts each (unset: the
// test is skipped; it measures, it asserts nothing): fork/exec of `true`
// as the worker's user; as a slot uid; through the namespace init; and
// through bubblewrap with the same view (when bwrap is installed). It
// logs min, median and max per mechanism.
func TestIsolationStartCost(t *testing.T) {
	n := 0
	if v := os.Getenv("BATCHD_MEASURE_STARTS"); v != "" {
		n = atoiOr(v, 0)
	}
	if n <= 0 {
		t.Skip("set BATCHD_MEASURE_STARTS=N to measure N starts per mechanism")
	}
	state := t.TempDir()
	scratchRoot := filepath.Join(state, "copies")
	scratch := filepath.Join(scratchRoot, "1")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	// Slot uids must cross to their scratch directory.
	for _, d := range []string{filepath.Dir(state), state, scratchRoot} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	data := t.TempDir()
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	run := map[string]func() error{
		"plain": func() error {
			cmd := exec.Command(truePath)
			cmd.Dir, cmd.SysProcAttr = scratch, sysProcAttr()
			return cmd.Run()
		},
	}
	if root {
		run["uid"] = func() error {
			s := &sandbox{mech: IsolationUID, root: true, uids: UIDRange{First: 63000, Count: 4}, ids: &indexPool{}}
			cmd := exec.Command(truePath)
			cmd.Dir = scratch
			p, err := s.prepare(cmd, "", scratch)
			if err != nil {
				return err
			}
			defer p.release()
			return cmd.Run()
		}
	}
	if probeNamespaces() == nil {
		run["namespaces"] = func() error {
			s := &sandbox{mech: IsolationNamespaces, root: root, uids: UIDRange{First: 63000, Count: 4}, ids: &indexPool{},
				maxProcs: DefaultMaxProcs, hide: []string{data, state, scratchRoot}}
			cmd := exec.Command(truePath)
			cmd.Dir = scratch
			p, err := s.prepare(cmd, "", scratch)
			if err != nil {
				return err
			}
			defer p.release()
			return cmd.Run()
		}
	}
	// The namespaces' own cost, without the init: `true` cloned into new
	// user, mount and PID namespaces.
	run["clone-only"] = func() error {
		cmd := exec.Command(truePath)
		cmd.Dir = "/"
		a := sysProcAttr()
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		cmd.SysProcAttr = a
		return cmd.Run()
	}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		// A scratch directory of its own, which the slot uid runs above
		// do not take over.
		scratch := filepath.Join(scratchRoot, "2")
		if err := os.Mkdir(scratch, 0o777); err != nil {
			t.Fatal(err)
		}
		run["bwrap"] = func() error {
			cmd := exec.Command(bwrap, "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm", "--tmpfs", data, "--tmpfs", state,
				"--bind", scratch, scratch, "--proc", "/proc", "--dev", "/dev", "--unshare-user", "--unshare-pid", "--die-with-parent",
				"--chdir", scratch, "--", truePath)
			cmd.SysProcAttr = sysProcAttr()
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
	}
	names := make([]string, 0, len(run))
	for k := range run {
		names = append(names, k)
	}
	slices.Sort(names)
	times := map[string][]time.Duration{}
	for i := 0; i < n; i++ {
		for _, k := range names {
			start := time.Now()
			if err := run[k](); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			times[k] = append(times[k], time.Since(start))
		}
	}
	la, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d starts each, alternated; load %s", n, la)
	for _, k := range names {
		d := times[k]
		slices.Sort(d)
		t.Logf("%-10s min %v median %v max %v", k, d[0].Round(time.Microsecond), d[len(d)/2].Round(time.Microsecond), d[len(d)-1].Round(time.Microsecond))
	}
}

func atoiOr(s string, def int) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return def
		}
		n = n*10 + int(c-'0')
	}
	return n
}
