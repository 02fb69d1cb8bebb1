package e2e

import "syscall"

// childAttr makes a child process get SIGKILL when the test binary dies
// (Pdeathsig), and puts it in a process group of its own.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
