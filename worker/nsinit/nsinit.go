// Package nsinit is the first program of a copy that the worker runs in
// its own user, mount and PID namespaces (worker isolation "namespaces").
//
// The worker starts its own executable (/proc/self/exe) as process 1 of a
// new PID namespace, as root of a new user namespace that maps only the
// worker's uid, in a new mount namespace, with the argument vector that
// Args builds. Before any other package of the program is initialised,
// this package's init sees that argument vector and, instead of the
// program, sets the copy's view of the machine up and executes the task:
//
//   - every mount is made private, then the hidden directories (the data
//     directory, the worker's state, the other copies' scratch directories)
//     are covered by empty tmpfs, as are /tmp and /dev/shm (one each per
//     copy), and the copy's own scratch directory is bound back at its path;
//   - a fresh /proc shows only the copy's own processes;
//   - the whole tree is made read-only except the scratch directory, the
//     working directory, /tmp, /dev/shm and /proc;
//   - RLIMIT_NPROC bounds the copy's processes: since Linux 5.14 the count
//     is kept per user namespace, so the limit holds per copy although all
//     copies run as one uid;
//   - the task runs in a further user namespace that maps the worker's uid
//     to itself and holds no capability over the mounts above, so it can
//     neither undo them nor see the directories under them.
//
// The task is then process 1 of its PID namespace: when it exits, the
// kernel kills whatever it left running, and it reaps its own orphans.
// Signals it sends itself without a handler are ignored (as for any
// namespace's process 1); the worker's SIGKILL and SIGSTOP always reach it.
//
// The package imports only the standard library, so that its init runs
// before the program's other packages are initialised: the cost of a copy
// start is one exec of the worker's binary and a few system calls.
package nsinit

import (
	"strconv"
	"strings"
)

// Arg0 is the argument vector's first element that selects the init.
const Arg0 = "batchd-nsinit"

// Spec is what the init needs to set a copy up.
type Spec struct {
	// UID and GID are who the task runs as: the worker's own, mapped to
	// themselves in the user namespace, or, with Switch, a uid the init
	// (then real root, in no user namespace) switches to before the exec.
	UID, GID int
	// Switch: the init runs as root and becomes UID and GID (with no
	// supplementary group) once the mounts are made.
	Switch bool
	// Scratch is the copy's scratch directory, bound back at its path.
	Scratch string
	// Dir is the task's working directory (Scratch when empty); made
	// writable when it is not under a hidden directory.
	Dir string
	// Hide lists directories covered by empty tmpfs.
	Hide []string
	// NProc is RLIMIT_NPROC for the task (0: unchanged).
	NProc int
	// Path is the task's executable (absolute) and Argv its arguments.
	Path string
	Argv []string
}

// Args is the argument vector that starts the init for s (the worker
// executes /proc/self/exe with it).
func Args(s Spec) []string {
	uid := strconv.Itoa(s.UID)
	if s.Switch {
		uid = "switch:" + uid
	}
	a := []string{Arg0, uid, strconv.Itoa(s.GID), s.Scratch, s.Dir, strconv.Itoa(s.NProc), strconv.Itoa(len(s.Hide))}
	a = append(a, s.Hide...)
	a = append(a, s.Path)
	return append(a, s.Argv...)
}

// parse reads an argument vector made by Args.
func parse(a []string) (Spec, bool) {
	if len(a) < 8 || a[0] != Arg0 {
		return Spec{}, false
	}
	var s Spec
	var err error
	uid, sw := strings.CutPrefix(a[1], "switch:")
	s.Switch = sw
	if s.UID, err = strconv.Atoi(uid); err != nil {
		return Spec{}, false
	}
	if s.GID, err = strconv.Atoi(a[2]); err != nil {
		return Spec{}, false
	}
	s.Scratch, s.Dir = a[3], a[4]
	if s.NProc, err = strconv.Atoi(a[5]); err != nil {
		return Spec{}, false
	}
	n, err := strconv.Atoi(a[6])
	if err != nil || n < 0 || len(a) < 8+n {
		return Spec{}, false
	}
	s.Hide = a[7 : 7+n]
	s.Path = a[7+n]
	s.Argv = a[8+n:]
	return s, true
}
