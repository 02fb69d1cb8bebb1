//go:build linux

package worker

import (
	"os"
	"syscall"
)

// outputPipe makes the pipe of one of a copy's output streams: r, the
// end the worker reads, is non-blocking and read through the runtime's
// poller; w, the copy's end, stays blocking and out of the poller, since
// the worker only hands it to the child and closes it. (os.Pipe puts
// both ends in the poller, which at a copy's two pipes cost four epoll
// registrations and four removals per copy.)
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
