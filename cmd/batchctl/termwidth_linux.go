package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalWidth is the width in columns of the terminal f is, 0 when f is
// not a terminal.
func terminalWidth(f *os.File) int {
	var ws struct{ Row, Col, X, Y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0
	}
	return int(ws.Col)
}
