//go:build !linux

package worker

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// supported reports whether this platform can run copies: the agent needs
// Linux process groups, Pdeathsig and /proc.
const supported = false

var errUnsupported = errors.New("worker: copies run on Linux only")

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func signalGroup(int, syscall.Signal) error { return errUnsupported }

func waitExited(int) error { return errUnsupported }

type procStat struct {
	State      byte
	CPUSeconds float64
}

func readProcStat(int) (procStat, error) { return procStat{}, errUnsupported }

func lockDir(string) (*os.File, error) { return nil, errUnsupported }

func killLeftovers(string) (int, error) { return 0, errUnsupported }

func niceThread(int) (func() bool, error) { return func() bool { return true }, errUnsupported }

// sandbox is isolation_linux.go's; copies do not run here.
type sandbox struct{ cg *cgroups }

type cgroups struct{}

func (*cgroups) close() {}

type prepared struct{ index int }

func (*prepared) copyUID() int { return -1 }

type limits struct {
	procs    int
	memoryMB int64
	cpus     int32
}

func (*sandbox) prepare(*exec.Cmd, string, string) (*prepared, error) { return nil, errUnsupported }

func (*sandbox) start(*exec.Cmd, *prepared, limits) (bool, error) { return false, errUnsupported }

func (*sandbox) done(*prepared) {}

func (*sandbox) hasForker(*prepared) bool { return false }

func (*cgroups) onForker(int, func() bool) error { return errUnsupported }

func probeNamespaces() error { return errUnsupported }

func (a *agent) setupIsolation(Config) error { a.sandbox = &sandbox{}; return nil }

func (a *agent) cleanScratch() error { return nil }

func (a *agent) logIsolation() {}
