//go:build !linux

package worker

import (
	"errors"
	"os"
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
