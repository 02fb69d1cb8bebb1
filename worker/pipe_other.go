//go:build !linux

package worker

import "os"

// outputPipe makes the pipe of one of a copy's output streams.
func outputPipe() (r, w *os.File, err error) { return os.Pipe() }
