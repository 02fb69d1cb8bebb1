//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"batchd/worker/nsinit"
)

// Capabilities the namespace init keeps across its exec (and drops
// before the task's): mounting, and emptying its bounding set.
const (
	capSetpcap  = 8
	capSysAdmin = 21
)

// sandbox applies the worker's isolation to each copy's command.
type sandbox struct {
	mech     Isolation
	root     bool // the worker runs as root
	uids     UIDRange
	maxProcs int
	hide     []string // directories a namespaced copy never sees
	// ids hands out per-copy indexes: the slot uid (and cgroup) a running
	// copy uses. Suspended copies keep theirs, so more copies than slots
	// may hold one.
	ids *indexPool
	cg  *cgroups // nil: no cgroup of our own to put copies in
}

// indexPool hands out free indexes.
type indexPool struct {
	mu    sync.Mutex
	inUse []bool
}

// takeNear takes index want if it is free, else the smallest free one.
func (p *indexPool) takeNear(want int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if want >= 0 && want < len(p.inUse) && !p.inUse[want] {
		p.inUse[want] = true
		return want
	}
	for i, used := range p.inUse {
		if !used {
			p.inUse[i] = true
			return i
		}
	}
	p.inUse = append(p.inUse, true)
	return len(p.inUse) - 1
}

func (p *indexPool) give(i int) {
	p.mu.Lock()
	p.inUse[i] = false
	p.mu.Unlock()
}

// identity is who a copy runs as.
type identity struct {
	uid, gid int
	groups   []uint32
	index    int // from sandbox.ids; -1 when none was taken
}

// prepare sets cmd (built for the task's argv, with Dir set) up to run
// the copy as the mechanism wants, with scratch as its scratch directory.
// Start it with start; call done once the copy is reaped.
func (s *sandbox) prepare(cmd *exec.Cmd, owner, scratch string) (*prepared, error) {
	return s.prepareNear(cmd, owner, scratch, -1)
}

// prepareNear is prepare taking index near if it is free: the index the
// scratch directory was last used at, whose uid owns it already.
func (s *sandbox) prepareNear(cmd *exec.Cmd, owner, scratch string, near int) (*prepared, error) {
	attr := sysProcAttr()
	cmd.SysProcAttr = attr
	id := identity{uid: os.Getuid(), gid: os.Getgid(), index: -1}
	release := func() {}
	switch s.mech {
	case IsolationUID:
		if err := s.slotUID(&id, &release, near); err != nil {
			return nil, err
		}
	case IsolationOwnerUID:
		u, err := user.Lookup(owner)
		if err != nil {
			return nil, fmt.Errorf("isolation owner-uid: no Unix user %q on this worker for the task's owner: %w", owner, err)
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			return nil, fmt.Errorf("isolation owner-uid: Unix user %q (uid %s) cannot run tasks", owner, u.Uid)
		}
		id.uid, id.gid = uid, gid
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					id.groups = append(id.groups, uint32(n))
				}
			}
		}
		if id.groups == nil {
			id.groups = []uint32{}
		}
	case IsolationNamespaces:
		if s.root {
			// A root worker's namespaced copies run as slot uids too: uid 0
			// would still own root's files.
			if err := s.slotUID(&id, &release, near); err != nil {
				return nil, err
			}
		}
	}
	if id.uid != os.Getuid() {
		// The scratch directory is the copy's alone: 0700 to its uid.
		if err := ownScratch(scratch, id.uid, id.gid); err != nil {
			release()
			return nil, fmt.Errorf("scratch dir: %w", err)
		}
		if err := scrubScratch(scratch, id.uid, id.gid); err != nil {
			release()
			return nil, fmt.Errorf("scratch dir: %w", err)
		}
	}
	if s.mech == IsolationNamespaces {
		s.namespaces(cmd, attr, id, scratch)
	} else if id.uid != os.Getuid() {
		attr.Credential = &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: id.groups}
	}
	if s.cg != nil && id.index < 0 {
		id.index = s.ids.takeNear(near)
		prev := release
		idx := id.index
		release = func() { prev(); s.ids.give(idx) }
	}
	return &prepared{attr: attr, index: id.index, uid: id.uid, release: release}, nil
}

// ownScratch makes dir uid's and gid's, mode 0700, unless it is so
// already (a directory handed back to a copy of the index it was last
// used at): a stat instead of a chown and a chmod.
func ownScratch(dir string, uid, gid int) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR &&
		int(st.Uid) == uid && int(st.Gid) == gid && st.Mode&0o7777 == 0o700 {
		return nil
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// scrubScratch makes sure dir, now uid's and 0700, is empty. A directory
// kept for reuse was empty when its copy handed it back, but while it
// waited its old slot uid still owned it, and another copy running as that
// uid (a later copy at the same index) could put files in it, which this
// copy, perhaps another user's, would then find. Now that only uid can
// write there and no other copy runs as uid, one look is enough; a
// directory that is not empty is made again.
func scrubScratch(dir string, uid, gid int) error {
	if empty, err := emptyDir(dir); err == nil && empty {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// slotUID takes an index (near if free) and makes id its slot uid and
// gid, with no supplementary group; release then gives the index back.
func (s *sandbox) slotUID(id *identity, release *func(), near int) error {
	i := s.ids.takeNear(near)
	if i >= s.uids.Count {
		s.ids.give(i)
		return fmt.Errorf("all %d slot uids (%s) are in use", s.uids.Count, s.uids)
	}
	id.index, id.uid, id.gid, id.groups = i, s.uids.First+i, s.uids.First+i, []uint32{}
	*release = func() { s.ids.give(i) }
	return nil
}

// prepared is a copy's command as sandbox.prepare left it.
type prepared struct {
	attr    *syscall.SysProcAttr
	index   int // sandbox.ids index, -1 when none
	uid     int // the uid the copy runs as
	release func()
}

// copyUID is the uid the copy runs as, -1 when it is the worker's own.
func (p *prepared) copyUID() int {
	if p == nil || p.uid == os.Getuid() {
		return -1
	}
	return p.uid
}

// start starts cmd in the copy's cgroups (with lim written there) when
// the worker has some. stuck says the calling thread could not leave a
// copy's cgroup (v1): it must end rather than fork again.
func (s *sandbox) start(cmd *exec.Cmd, p *prepared, lim limits) (stuck bool, err error) {
	if s.cg == nil {
		return false, cmd.Start()
	}
	if err := s.cg.setup(p.index, lim); err != nil {
		return false, err
	}
	return s.cg.start(cmd, p.attr, p.index, lim)
}

// hasForker says whether the copy is forked by its index's own thread,
// which lives in the index's cgroups (cgroup v1; see forker).
func (s *sandbox) hasForker(p *prepared) bool {
	return s.cg != nil && !s.cg.v2 && p.index >= 0
}

// done kills what the copy left in its cgroups and gives back what
// prepare took (not an index whose cgroup it could not empty). Call it
// once the copy's leader is reaped.
func (s *sandbox) done(p *prepared) {
	if s.cg != nil && p.index >= 0 && !s.cg.killAll(p.index) {
		// Something there outlives every SIGKILL so far (a fork bomb
		// outrunning the sweeps): the index, its cgroup and its slot uid
		// are not handed to another copy.
		return
	}
	p.release()
}

// namespaces makes cmd start the namespace init (package nsinit), which
// sets the copy's view up and execs the task.
func (s *sandbox) namespaces(cmd *exec.Cmd, attr *syscall.SysProcAttr, id identity, scratch string) {
	spec := nsinit.Spec{UID: id.uid, GID: id.gid, Scratch: scratch, Dir: cmd.Dir, Hide: s.hide,
		NProc: s.maxProcs, Path: cmd.Path, Argv: cmd.Args}
	if s.cg != nil && slices.Contains(s.cg.ctrls, "pids") {
		spec.NProc = 0 // the cgroup's pids.max holds per copy
	}
	if s.root {
		// Root needs no user namespace to mount, and the init becomes the
		// slot uid itself. Without CLONE_NEWUSER, Go forks the child with
		// CLONE_VFORK|CLONE_VM instead of copying the parent's page
		// tables, which for a server with a large heap cost milliseconds
		// of its CPU per copy.
		attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		spec.Switch = true
	} else {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: id.uid, HostID: id.uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: id.gid, HostID: id.gid, Size: 1}}
		attr.AmbientCaps = []uintptr{capSysAdmin, capSetpcap}
	}
	if spec.Dir == scratch {
		spec.Dir = ""
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = nsinit.Args(spec)
}

// probeNamespaces starts `true` the way IsolationNamespaces starts a
// copy, once per process, and says why that failed.
var probeNamespaces = sync.OnceValue(func() error {
	dir, err := os.MkdirTemp("", "batchd-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := "/bin/true"
	if _, err := os.Stat(path); err != nil {
		path = "/bin/sh"
	}
	s := &sandbox{mech: IsolationNamespaces, root: os.Geteuid() == 0, uids: DefaultSlotUIDs, ids: &indexPool{}}
	cmd := exec.Command(path)
	cmd.Dir = dir
	var out capBuffer
	out.cap = 4096
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := s.prepare(cmd, "", dir)
	if err != nil {
		return err
	}
	defer p.release()
	if err := cmd.Run(); err != nil {
		if msg := out.buf.String(); msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
})

// setNotDumpable makes this process non-dumpable: processes of its uid
// can then neither ptrace it nor read its /proc/PID/environ, mem or fds.
func setNotDumpable() error {
	const prSetDumpable = 4
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return e
	}
	return nil
}

// setProcLimit sets RLIMIT_NPROC of this (root) process, which root itself
// ignores: the copies it starts as other uids inherit it, so a slot uid
// can hold at most n processes, a fork bomb's included.
func setProcLimit(n int) error {
	lim := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	return syscall.Setrlimit(6 /* RLIMIT_NPROC */, &lim)
}

// absAll makes paths absolute and clean, dropping empty ones.
func absAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// scratchPrefix starts the name of a root worker's scratch root, made
// afresh in the temporary directory at each start.
const scratchPrefix = "batchd-copies-"

// setupIsolation chooses the isolation mechanism, the scratch root and
// the limits, and makes the process non-dumpable where that is safe.
func (a *agent) setupIsolation(cfg Config) error {
	mech, why, err := chooseIsolation(cmpOr(cfg.Isolation, IsolationAuto))
	if err != nil {
		return err
	}
	a.isolation, a.isolationWhy, a.boundUser = mech, why, cfg.BoundUser
	root := os.Geteuid() == 0
	a.maxProcs = cfg.MaxProcs
	switch {
	case a.maxProcs == 0:
		a.maxProcs = DefaultMaxProcs
	case a.maxProcs < 0:
		a.maxProcs = 0
	}
	uids := cfg.SlotUIDs
	if uids.Count == 0 {
		uids = DefaultSlotUIDs
	}
	a.scratchRoot = filepath.Join(a.stateDir, "copies")
	keep := filepath.Join(a.stateDir, "scratch-root")
	if b, err := os.ReadFile(keep); err == nil {
		old := strings.TrimSpace(string(b))
		if filepath.Dir(old) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(old), scratchPrefix) {
			a.oldScratch = old
		}
	}
	if root && mech != IsolationNone {
		// Copies run as other uids, which cannot pass the 0700 state
		// directory: their scratch directories live under a root of their
		// own that they may cross but not list (0711), each 0700 to its
		// copy's uid.
		dir, err := os.MkdirTemp("", scratchPrefix)
		if err != nil {
			return fmt.Errorf("worker: scratch root: %w", err)
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			return fmt.Errorf("worker: scratch root: %w", err)
		}
		if err := os.WriteFile(keep, []byte(dir+"\n"), 0o600); err != nil {
			return fmt.Errorf("worker: state dir: %w", err)
		}
		a.scratchRoot = dir
	}
	a.scratch = &scratchDirs{root: a.scratchRoot, max: 2 * a.slots}
	sb := &sandbox{mech: mech, root: root, uids: uids, maxProcs: a.maxProcs, ids: &indexPool{},
		hide: absAll(append(slices.Clone(cfg.Hide), a.stateDir, a.scratchRoot))}
	var enforced, notEnforced []string
	if !a.noExec {
		cg, cgWhy := openCgroups(a.name)
		if cg != nil {
			sb.cg = cg
			enforced = append(enforced, cg.String())
		} else {
			notEnforced = append(notEnforced, cgWhy)
		}
	}
	cgPids := sb.cg != nil && slices.Contains(sb.cg.ctrls, "pids")
	if a.maxProcs > 0 && !cgPids { // else the cgroup's pids.max holds per copy
		switch {
		case mech == IsolationUID || mech == IsolationOwnerUID || mech == IsolationNamespaces && root:
			if err := setProcLimit(a.maxProcs); err != nil {
				return fmt.Errorf("worker: process limit: %w", err)
			}
			enforced = append(enforced, "pids (rlimit per uid)")
		case mech == IsolationNamespaces:
			enforced = append(enforced, "pids (rlimit per user namespace)")
		}
	}
	if len(enforced) == 0 {
		enforced = append(enforced, "none")
	}
	a.limits = strings.Join(enforced, "; ")
	if sb.cg == nil {
		a.limits += "; cpu, memory accounted only"
	}
	a.limitsWhy = strings.Join(notEnforced, "; ")
	a.sandbox = sb
	if mech != IsolationNamespaces || root {
		// A non-dumpable process cannot be traced, nor its environment,
		// memory or descriptors read, by processes of its uid. (A
		// non-root worker with namespaces stays dumpable: the kernel would
		// then refuse it its children's uid maps. Its copies cannot name
		// it: it is in no PID namespace they see.)
		if err := setNotDumpable(); err != nil {
			return fmt.Errorf("worker: make the worker non-dumpable: %w", err)
		}
	}
	return nil
}

func cmpOr(i, def Isolation) Isolation {
	if i == "" {
		return def
	}
	return i
}

// cleanScratch kills the processes that copies of an earlier agent on
// this state directory left (they died with it, but what they forked may
// not have), removes their scratch directories and makes this agent's.
func (a *agent) cleanScratch() error {
	for _, dir := range []string{filepath.Join(a.stateDir, "copies"), a.oldScratch} {
		if dir == "" || dir == a.scratchRoot && dir != filepath.Join(a.stateDir, "copies") {
			continue
		}
		// In a new state directory no earlier agent's copies can carry
		// it in their environment: a pilot does not read every
		// process's environment (tens of milliseconds) at its start.
		if !a.freshState {
			if n, err := killLeftovers(dir + string(filepath.Separator)); err != nil {
				a.log.Warn("looking for leftover processes", "err", err)
			} else if n > 0 {
				a.log.Warn("killed leftover processes of an earlier worker", "count", n)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("worker: state dir: %w", err)
		}
	}
	if a.scratchRoot == filepath.Join(a.stateDir, "copies") {
		if err := os.Mkdir(a.scratchRoot, 0o700); err != nil {
			return fmt.Errorf("worker: state dir: %w", err)
		}
	}
	return nil
}

// logIsolation says, once and plainly, how tasks are kept apart here.
func (a *agent) logIsolation() {
	if a.isolation == IsolationNone {
		a.log.Warn("TASKS ARE NOT ISOLATED on this worker: they run as its own user and can read what it reads, "+
			"signal and trace it; it runs the tasks of one batchd user only",
			"isolation", a.isolation, "why", a.isolationWhy, "bound_user", a.boundUser, "limits", a.limits)
		if a.boundUser == "" {
			a.log.Warn("no --user given: a server that does not allow sharing without isolation gives this worker no tasks")
		}
	} else {
		a.log.Info("tasks are isolated", "isolation", a.isolation, "why", a.isolationWhy, "limits", a.limits,
			"scratch", a.scratchRoot)
	}
	if a.limitsWhy != "" {
		a.log.Warn("some per-copy limits are not enforced", "limits", a.limits, "why", a.limitsWhy)
	}
}
