//go:build !linux

package e2e

import "syscall"

// childAttr is empty where Pdeathsig does not exist: a child may then
// outlive a test binary that dies without cleanup.
func childAttr() *syscall.SysProcAttr { return nil }
