//go:build linux

package worker

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// supported reports whether this platform can run copies.
const supported = true

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat. It is 100
// on every Linux architecture Go supports.
const clockTicks = 100

// sysProcAttr puts the copy in its own session and process group, so that
// kill, suspend and resume reach every process it forks, and has the kernel
// SIGKILL it when the agent dies. Its own session, not just a group: the
// kernel lets any process send SIGCONT to the processes of its session,
// whatever their uid, so a copy in the worker's session could resume other
// copies that the worker suspended.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process: the copy's goroutine keeps its thread locked while the child lives
// (see copyRun.run), so the Go runtime never retires that thread under it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group pgid. A group that is gone is
// not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("worker: refusing to signal process group <= 1")
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// waitExited blocks until the process pid has exited, without reaping it.
// While the zombie stays unreaped its pid, which is also its process group's
// id, cannot be reused, so the group can be signalled safely in between.
//
// It waits in the runtime's poller on a pidfd, so that a running copy
// holds no thread of the worker's. A thread blocked in waitid for each
// copy kept the runtime's monitor retaking processors from those threads
// and waking others in their place, thousands of times a second with
// 64 slots of short tasks. Where the kernel has no pidfds (before Linux
// 5.3) it blocks in waitid as before.
func waitExited(pid int) error {
	fd, _, e := syscall.Syscall(sysPidfdOpen, uintptr(pid), pidfdNonblock, 0)
	if e != 0 {
		return waitExitedBlocking(pid)
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitExitedBlocking(pid)
	}
	var werr error
	if err := rc.Read(func(fd uintptr) bool {
		var info [128]byte // siginfo_t; the kernel zeroes it when nothing is waitable
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPidfd, fd,
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT|syscall.WNOHANG, 0, 0)
		switch e {
		case 0:
			// si_signo, the first field, is SIGCHLD once pid has exited.
			return *(*int32)(unsafe.Pointer(&info[0])) != 0
		case syscall.EINTR:
			return false
		default:
			werr = e
			return true
		}
	}); err != nil {
		// The poller would not take the pidfd: wait the old way.
		return waitExitedBlocking(pid)
	}
	return werr
}

// pidfd_open(2) and waitid's P_PIDFD (Linux 5.3 and 5.4); the syscall's
// number is the same on every architecture.
const (
	sysPidfdOpen  = 434
	pidfdNonblock = syscall.O_NONBLOCK
	pPidfd        = 3
)

// waitExitedBlocking is waitExited in a blocking waitid, on a thread of
// its own.
func waitExitedBlocking(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return e
		}
	}
}

// procStat is what batchd reads from /proc/PID/stat.
type procStat struct {
	State      byte    // R, S, D, T (stopped), Z, ...
	CPUSeconds float64 // utime+stime+cutime+cstime
}

// readProcStat reads /proc/PID/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may contain spaces or
	// parentheses itself: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, errors.New("worker: malformed /proc stat")
	}
	f := bytes.Fields(b[i+2:])
	// f[0] is field 3 (state); utime..cstime are fields 14..17.
	if len(f) < 15 {
		return procStat{}, errors.New("worker: short /proc stat")
	}
	var ticks float64
	for _, s := range f[11:15] {
		n, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return procStat{}, err
		}
		ticks += float64(n)
	}
	return procStat{State: f[0][0], CPUSeconds: ticks / clockTicks}, nil
}

// lockDir takes an exclusive lock on dir/lock for the life of the process
// (released when the returned file is closed or the process dies), so that
// two agents never share a state directory.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("state directory " + dir + " is in use by another worker")
		}
		return nil, err
	}
	return f, nil
}

// killLeftovers SIGKILLs every process whose environment holds
// BATCH_PROGRESS_FILE under prefix: processes of copies started by an
// earlier agent on this state directory that outlived it (Pdeathsig reaches
// only a copy's leader, not what it forked). It returns how many it killed.
func killLeftovers(prefix string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	marker := []byte("BATCH_PROGRESS_FILE=" + prefix)
	self := os.Getpid()
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, marker) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
				break
			}
		}
	}
	return n, nil
}

// niceThread raises the calling thread's nice value by inc (at most 19):
// a child it forks starts with it. The goroutine must be locked to its
// thread. restore sets the thread's value back and reports whether it
// could (lowering a nice value needs CAP_SYS_NICE or RLIMIT_NICE).
func niceThread(inc int) (restore func() bool, err error) {
	tid := syscall.Gettid()
	// The raw getpriority system call answers 20 - nice (1..40); with
	// PRIO_PROCESS and a thread id it reads and sets that thread alone.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return func() bool { return true }, err
	}
	own := 20 - raw
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(own+inc, 19)); err != nil {
		return func() bool { return true }, err
	}
	return func() bool { return syscall.Setpriority(syscall.PRIO_PROCESS, tid, own) == nil }, nil
}
