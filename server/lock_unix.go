//go:build unix

package server

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's exclusive flock without waiting; held is true when
// another open file description holds it. The lock lasts until f is closed
// (or the process exits, however it exits).
func tryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
