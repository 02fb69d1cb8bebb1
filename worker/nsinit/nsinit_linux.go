//go:build linux

package nsinit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// The package's init runs before the program's other packages: when the
// argument vector is the init's, it sets the copy up and executes the task
// (it never returns then).
func init() {
	if len(os.Args) == 0 || os.Args[0] != Arg0 {
		return
	}
	s, ok := parse(os.Args)
	if !ok {
		fail(errors.New("bad arguments"))
	}
	if err := setup(s); err != nil {
		fail(err)
	}
	err := syscall.Exec(s.Path, s.Argv, os.Environ())
	fmt.Fprintf(os.Stderr, "batchd: exec %s: %v\n", s.Path, err)
	os.Exit(127)
}

// fail says why the copy could not be set up and exits 127, as a shell
// does for a command it cannot run.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "batchd: isolating the task: %v\n", err)
	os.Exit(127)
}

// Linux constants the syscall package lacks.
const (
	sysMountSetattr     = 442 // mount_setattr(2), the same number on every architecture
	atRecursive         = 0x8000
	mountAttrRdonly     = 0x1
	prCapAmbient        = 47
	prCapAmbientClear   = 4
	prSetNoNewPrivs     = 38
	prCapbsetDrop       = 24
	linuxCapVersion3    = 0x20080522
	lastCapProbeCeiling = 63
	oPath               = 0x200000 // O_PATH
)

// mountAttr is struct mount_attr.
type mountAttr struct {
	set, clr, propagation, usernsFD uint64
}

// setattr sets (or clears) MOUNT_ATTR_RDONLY on the mount at path, and
// on every mount below it when recursive.
func setattr(path string, rdonly, recursive bool) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	var a mountAttr
	if rdonly {
		a.set = mountAttrRdonly
	} else {
		a.clr = mountAttrRdonly
	}
	flags := uintptr(0)
	if recursive {
		flags = atRecursive
	}
	fdcwd := -100 // AT_FDCWD
	_, _, e := syscall.Syscall6(sysMountSetattr, uintptr(fdcwd), uintptr(unsafe.Pointer(p)), flags,
		uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0)
	if e != 0 {
		return fmt.Errorf("mount_setattr %s: %w", path, e)
	}
	return nil
}

// under says whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// setup builds the copy's view of the machine (see the package comment)
// and drops every capability, leaving the task's executable to exec.
func setup(s Spec) error {
	// Nothing mounted here reaches the worker's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	dir := s.Dir
	if dir == "" {
		dir = s.Scratch
	}
	// The scratch and working directories, held open to be bound back
	// once what contains them is hidden.
	keep := []string{s.Scratch}
	if dir != s.Scratch {
		keep = append(keep, dir)
	}
	fds := make([]int, len(keep))
	for i, k := range keep {
		fd, err := syscall.Open(k, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", k, err)
		}
		fds[i] = fd
	}
	// Outer directories first: an inner one is then gone already. /tmp
	// and /dev/shm get an empty tmpfs of their own too: copies that share
	// a uid share no files there.
	private := []string{"/tmp", "/dev/shm"}
	hide := append(slices.Clone(s.Hide), private...)
	slices.SortFunc(hide, func(a, b string) int { return len(a) - len(b) })
	var covering []string
	covered := func(p string) bool {
		return slices.ContainsFunc(covering, func(h string) bool { return under(p, h) })
	}
	writable := []string{"/proc"}
	for _, h := range hide {
		fi, err := os.Lstat(h)
		if err != nil || !fi.IsDir() || covered(h) {
			continue // not there, or covered by an outer one already
		}
		opts := "mode=0755,size=1m"
		if slices.Contains(private, h) {
			opts = "mode=1777"
			writable = append(writable, h)
		}
		if err := syscall.Mount("tmpfs", h, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		covering = append(covering, h)
	}
	for i, k := range keep {
		if i > 0 && covered(k) {
			continue // a working directory in a hidden place stays hidden
		}
		if covered(k) {
			if err := os.MkdirAll(k, 0o755); err != nil {
				return fmt.Errorf("scratch directory: %w", err)
			}
		}
		src := "/proc/self/fd/" + strconv.Itoa(fds[i])
		if err := syscall.Mount(src, k, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", k, err)
		}
		writable = append(writable, k)
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	// The copy's processes only: this is process 1 of a new PID namespace.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := setattr("/", true, true); err != nil {
		return err
	}
	for _, w := range writable {
		if err := setattr(w, false, false); err != nil {
			return err
		}
	}
	if err := syscall.Chdir(dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	var cur syscall.Rlimit
	if s.NProc > 0 && syscall.Getrlimit(6 /* RLIMIT_NPROC */, &cur) == nil {
		n := min(uint64(s.NProc), cur.Max) // lower only: raising needs a privilege
		lim := syscall.Rlimit{Cur: n, Max: n}
		if err := syscall.Setrlimit(6 /* RLIMIT_NPROC */, &lim); err != nil {
			return fmt.Errorf("process limit: %w", err)
		}
	}
	return dropCaps(s)
}

// dropCaps leaves the thread that will exec the task no capability to
// gain: an empty bounding set (so that even uid 0 gains none at exec), no
// ambient, inheritable, permitted or effective capability, and
// no_new_privs (setuid and file capabilities do nothing); with s.Switch
// it becomes s.UID and s.GID with no supplementary group first. The
// package's init runs on the main thread, locked to it, which then execs.
func dropCaps(s Spec) error {
	for c := 0; c <= lastCapProbeCeiling; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0); e == syscall.EINVAL {
			break // past the kernel's last capability
		} else if e != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0); e != 0 {
		return fmt.Errorf("clear ambient capabilities: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	if s.Switch {
		// (syscall's Setgroups, Setgid and Setuid change every thread.)
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setgid(s.GID); err != nil {
			return fmt.Errorf("setgid %d: %w", s.GID, err)
		}
		if err := syscall.Setuid(s.UID); err != nil {
			return fmt.Errorf("setuid %d: %w", s.UID, err)
		}
		// The kernel forgets the parent-death signal when the uid
		// changes: ask for it again, so that the copy dies with its
		// worker.
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); e != 0 {
			return fmt.Errorf("parent-death signal: %w", e)
		}
	}
	hdr := struct {
		version uint32
		pid     int32
	}{linuxCapVersion3, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}
