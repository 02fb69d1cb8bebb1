//go:build linux

package worker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroups puts each copy in a cgroup of its own slot (one per index of
// sandbox.ids), created under the worker's own cgroup, and writes the
// copy's limits there before it starts: pids.max (the process limit), the
// memory the task asked for and a CPU quota of the CPUs it asked for.
//
// With cgroup v2 the copy is cloned straight into its cgroup
// (CLONE_INTO_CGROUP). With v1, which has no such flag but lets threads of
// one process sit in different cgroups, the forking thread (locked to its
// goroutine) joins the copy's cgroups for the fork, so the child starts
// there, and goes back right after. Memory and CPU limits are written
// before the fork, so they bind from the child's first instruction.
type cgroups struct {
	v2 bool
	// dirs are the worker's own cgroup directories, one per controller
	// (v1), or its v2 cgroup's "slots" parent.
	dirs map[string]string // controller -> directory the slots go under
	// back are the worker's own cgroups (v1), where the forking thread
	// returns to.
	back map[string]string
	// ctrls are the controllers enforced, in order.
	ctrls []string

	mu sync.Mutex
	// written[i] are the files of index i's cgroups and the values last
	// written to them; a missing entry is unknown (never written, or a
	// write failed).
	written map[int]map[string]string
	// forkers are the v1 indexes' forking threads (forker_linux.go).
	forkers map[int]*forker
	// pidsFDs are the indexes' pids.current files, kept open: a copy's
	// end reads it once, and a pread of an open file costs a fraction of
	// an open, fstat, read and close of a cgroup file.
	pidsFDs map[int]int
	closed  bool
}

// cgroupRoot is where cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// openCgroups prepares per-copy cgroups under the worker's own, named by
// name (the worker's, made unique to this agent). It returns nil and why
// when none can be used. close removes them.
func openCgroups(name string) (*cgroups, string) {
	var b [3]byte
	_, _ = rand.Read(b[:])
	name = sanitize(name) + "-" + hex.EncodeToString(b[:])
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return openV2(name)
	}
	return openV1(name)
}

// ownCgroups reads /proc/self/cgroup: controller (or "" for v2) -> path.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			m[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			m[c] = f[2]
		}
	}
	return m, nil
}

// openV1 sets up the pids, memory and cpu controllers of a cgroup v1
// hierarchy (those mounted and writable).
func openV1(name string) (*cgroups, string) {
	own, err := ownCgroups()
	if err != nil {
		return nil, "cannot read /proc/self/cgroup: " + err.Error()
	}
	cg := &cgroups{dirs: map[string]string{}, back: map[string]string{}}
	var why []string
	for _, c := range []string{"pids", "memory", "cpu"} {
		path, ok := own[c]
		if !ok {
			why = append(why, c+": not mounted")
			continue
		}
		mnt := filepath.Join(cgroupRoot, c) // cpu is a link to cpu,cpuacct where they share a hierarchy
		back := filepath.Join(mnt, path)
		dir := filepath.Join(back, "batchd-"+name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			why = append(why, c+": "+err.Error())
			continue
		}
		cg.dirs[c], cg.back[c] = dir, back
		cg.ctrls = append(cg.ctrls, c)
	}
	if len(cg.ctrls) == 0 {
		return nil, "cgroup v1: " + strings.Join(why, "; ")
	}
	return cg, ""
}

// openV2 sets up a cgroup v2 subtree under the worker's own cgroup: the
// worker moves into a leaf of its own ("worker"), since a v2 cgroup with
// processes cannot enable controllers for its children, and the copies'
// slots go next to it.
func openV2(name string) (*cgroups, string) {
	own, err := ownCgroups()
	if err != nil {
		return nil, "cannot read /proc/self/cgroup: " + err.Error()
	}
	path, ok := own[""]
	if !ok {
		return nil, "cgroup v2: this process is in no v2 cgroup"
	}
	dir := filepath.Join(cgroupRoot, path)
	if syscall.Access(dir, 2 /* W_OK */) != nil {
		return nil, "cgroup v2 at " + dir + " is not writable by this worker (run it with a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes)"
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, "cgroup v2: " + err.Error()
	}
	var ctrls []string
	for _, c := range []string{"pids", "memory", "cpu"} {
		if slices.Contains(strings.Fields(string(avail)), c) {
			ctrls = append(ctrls, c)
		}
	}
	if len(ctrls) == 0 {
		return nil, "cgroup v2 at " + dir + ": none of pids, memory, cpu is available"
	}
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	self := strconv.Itoa(os.Getpid())
	if f := strings.Fields(string(procs)); len(f) > 0 && !(len(f) == 1 && f[0] == self) {
		// Other processes share our cgroup: moving them is not ours to do.
		if !strings.HasSuffix(path, "/worker") {
			return nil, "cgroup v2 at " + dir + " holds other processes too (give the worker a cgroup of its own)"
		}
	}
	leaf := filepath.Join(dir, "worker")
	if strings.HasSuffix(path, "/worker") { // an earlier agent of this process moved it already
		leaf, dir = dir, filepath.Dir(dir)
	}
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, "cgroup v2: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(self), 0); err != nil {
		return nil, "cgroup v2: move the worker into " + leaf + ": " + err.Error()
	}
	enable := "+" + strings.Join(ctrls, " +")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		return nil, "cgroup v2: enable " + enable + " in " + dir + ": " + err.Error()
	}
	slots := filepath.Join(dir, "batchd-"+name)
	if err := os.Mkdir(slots, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, "cgroup v2: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(slots, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		return nil, "cgroup v2: enable " + enable + " in " + slots + ": " + err.Error()
	}
	return &cgroups{v2: true, dirs: map[string]string{"": slots}, ctrls: ctrls}, ""
}

// close kills what is left in the copies' cgroups and removes them.
func (cg *cgroups) close() {
	cg.stopForkers()
	for _, c := range cg.ctrlDirs() {
		slots, _ := filepath.Glob(filepath.Join(cg.dirs[c], "slot-*"))
		for _, s := range slots {
			if i, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(s), "slot-")); err == nil && c == cg.ctrlDirs()[0] {
				cg.killAll(i)
			}
		}
	}
	cg.closePidsFDs()
	for _, c := range cg.ctrlDirs() {
		slots, _ := filepath.Glob(filepath.Join(cg.dirs[c], "slot-*"))
		for _, s := range slots {
			rmdirWait(s)
		}
		rmdirWait(cg.dirs[c])
	}
}

// rmdirWait removes an empty cgroup, waiting a little for the processes
// just killed in it to be gone.
func rmdirWait(dir string) {
	for try := 0; try < 50; try++ {
		if err := syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) || !errors.Is(err, syscall.EBUSY) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sanitize keeps a name usable as one path element.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, s)
}

// String says what is enforced, for RegisterRequest.limits.
func (cg *cgroups) String() string {
	v := "v1"
	if cg.v2 {
		v = "v2"
	}
	return strings.Join(cg.ctrls, ",") + " (cgroup " + v + ")"
}

// limits are what one copy may use.
type limits struct {
	procs    int
	memoryMB int64 // 0: no limit
	cpus     int32 // 0: no quota
}

// slotDir is index i's cgroup directory for controller c ("" for v2).
func (cg *cgroups) slotDir(c string, i int) string {
	return filepath.Join(cg.dirs[c], "slot-"+strconv.Itoa(i))
}

// cpuPeriod is the CFS period the CPU quota is given in, µs.
const cpuPeriod = 100000

// tracker is the hierarchy every copy joins (v1): pids where there is
// one, since it counts a copy's processes and lists what it leaves.
func (cg *cgroups) tracker() string {
	if cg.v2 {
		return ""
	}
	if slices.Contains(cg.ctrls, "pids") {
		return "pids"
	}
	return cg.ctrls[0]
}

// joins are the v1 hierarchies a copy with limits lim is born in: the
// tracker, and memory and cpu only when lim asks for them.
func (cg *cgroups) joins(lim limits) []string {
	var out []string
	for _, c := range cg.ctrls {
		if c == cg.tracker() || c == "memory" && lim.memoryMB > 0 || c == "cpu" && lim.cpus > 0 {
			out = append(out, c)
		}
	}
	return out
}

// setup creates index i's cgroups if needed and writes lim into those the
// copy joins (all of them with v2), where they differ from what was last
// written there.
func (cg *cgroups) setup(i int, lim limits) error {
	mem, cpu := "-1", "-1"
	if cg.v2 {
		mem, cpu = "max", "max "+strconv.Itoa(cpuPeriod)
	}
	if lim.memoryMB > 0 {
		mem = strconv.FormatInt(lim.memoryMB<<20, 10)
	}
	if lim.cpus > 0 {
		q := strconv.Itoa(int(lim.cpus) * cpuPeriod)
		if cg.v2 {
			cpu = q + " " + strconv.Itoa(cpuPeriod)
		} else {
			cpu = q
		}
	}
	ctrls := cg.ctrls
	if !cg.v2 {
		ctrls = cg.joins(lim)
	}
	var files [][2]string
	for _, c := range ctrls {
		d := c
		if cg.v2 {
			d = ""
		}
		dir := cg.slotDir(d, i)
		switch {
		case c == "pids" && cg.v2:
			files = append(files, [2]string{filepath.Join(dir, "pids.max"), strconv.Itoa(lim.procs)})
		case c == "pids":
			// The index's forking thread lives there too (forker).
			files = append(files, [2]string{filepath.Join(dir, "pids.max"), strconv.Itoa(lim.procs + 1)})
		case c == "memory" && cg.v2:
			files = append(files, [2]string{filepath.Join(dir, "memory.max"), mem}, [2]string{filepath.Join(dir, "memory.swap.max"), "0"})
		case c == "memory":
			files = append(files, [2]string{filepath.Join(dir, "memory.limit_in_bytes"), mem})
		case c == "cpu" && cg.v2:
			files = append(files, [2]string{filepath.Join(dir, "cpu.max"), cpu})
		case c == "cpu":
			files = append(files, [2]string{filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)}, [2]string{filepath.Join(dir, "cpu.cfs_quota_us"), cpu})
		}
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.written == nil {
		cg.written = map[int]map[string]string{}
	}
	done := cg.written[i]
	if done == nil {
		for _, c := range cg.ctrlDirs() {
			dir := cg.slotDir(c, i)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
		}
		done = map[string]string{}
		cg.written[i] = done
	}
	for _, f := range files {
		if v, ok := done[f[0]]; ok && v == f[1] {
			continue
		}
		delete(done, f[0])
		if err := writeCg(f[0], f[1]); err != nil {
			if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f[0], "swap.max") {
				continue
			}
			return err
		}
		done[f[0]] = f[1]
	}
	return nil
}

// ctrlDirs are the keys of dirs, in controller order.
func (cg *cgroups) ctrlDirs() []string {
	if cg.v2 {
		return []string{""}
	}
	return cg.ctrls
}

// writeCg writes one cgroup file, whose errors say which value it refused.
func writeCg(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		return fmt.Errorf("cgroup: write %s to %s: %w", v, path, err)
	}
	return nil
}

// start runs cmd.Start with the child born in index i's cgroups. With v1
// it must run on index i's forker thread (onForker), which lives in the
// tracking hierarchy and joins memory and cpu for the fork when lim asks
// for them; stuck says it could not leave one of those again.
func (cg *cgroups) start(cmd interface{ Start() error }, attr *syscall.SysProcAttr, i int, lim limits) (stuck bool, err error) {
	if cg.v2 {
		fd, err := syscall.Open(cg.slotDir("", i), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return false, fmt.Errorf("cgroup: %w", err)
		}
		defer syscall.Close(fd)
		attr.UseCgroupFD, attr.CgroupFD = true, fd
		return false, cmd.Start()
	}
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	var moved []string
	defer func() {
		for _, c := range moved {
			if err := os.WriteFile(filepath.Join(cg.back[c], "tasks"), tid, 0); err != nil {
				stuck = true
			}
		}
	}()
	for _, c := range cg.joins(lim) {
		if c == cg.tracker() {
			continue // the forker lives there
		}
		if err := os.WriteFile(filepath.Join(cg.slotDir(c, i), "tasks"), tid, 0); err != nil {
			return false, fmt.Errorf("cgroup: join %s: %w", cg.slotDir(c, i), err)
		}
		moved = append(moved, c)
	}
	return false, cmd.Start()
}

// killAll kills every process left in index i's cgroup (a copy's
// processes that left its process group; a fork bomb's), again until none
// is left, and says whether none is (it gives up after a thousand rounds).
func (cg *cgroups) killAll(i int) bool {
	// Every process of the copy is in the tracker's hierarchy.
	dir := cg.slotDir(cg.tracker(), i)
	pids := slices.Contains(cg.ctrls, "pids")
	for try := 0; try < 1000; try++ {
		// pids.current counts the processes not yet reaped too: zero
		// there is the one read a copy that left nothing costs.
		if pids && cg.pidsLeft(i) <= cg.resident(i) {
			return true
		}
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		procs = bytes.ReplaceAll(append([]byte("\n"), procs...), []byte("\n"+strconv.Itoa(os.Getpid())+"\n"), []byte("\n"))
		if len(bytes.TrimSpace(procs)) == 0 {
			if !pids {
				return true
			}
			// Killed processes leave cgroup.procs at once but hold their
			// pids.max charge until reaped: a copy started here meanwhile
			// could not fork.
			time.Sleep(time.Millisecond)
			continue
		}
		if !cg.v2 || os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
			killPids(procs)
		}
		if try > 0 {
			time.Sleep(time.Millisecond) // the killed ones are being reaped
		}
	}
	return false
}

// resident is how many of the worker's own threads index i's pids
// cgroup counts: its forker's (v1).
func (cg *cgroups) resident(i int) int {
	if cg.v2 {
		return 0
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.forkers[i] != nil {
		return 1
	}
	return 0
}

// pidsLeft is index i's pids.current (processes not yet reaped
// included), 0 without a pids controller or when it cannot be read.
func (cg *cgroups) pidsLeft(i int) int {
	if !slices.Contains(cg.ctrls, "pids") {
		return 0
	}
	fd, err := cg.pidsFD(i)
	if err != nil {
		return 0
	}
	// A read at offset 0 of a cgroup file shows its value now, however
	// often the file was read before.
	var b [32]byte
	n, err := syscall.Pread(fd, b[:], 0)
	if err != nil || n <= 0 {
		cg.mu.Lock()
		if cg.pidsFDs[i] == fd {
			delete(cg.pidsFDs, i)
			syscall.Close(fd)
		}
		cg.mu.Unlock()
		return 0
	}
	v, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return v
}

// pidsFD is index i's open pids.current, opened on first use.
func (cg *cgroups) pidsFD(i int) (int, error) {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if fd, ok := cg.pidsFDs[i]; ok {
		return fd, nil
	}
	dir := cg.slotDir("", i)
	if !cg.v2 {
		dir = cg.slotDir("pids", i)
	}
	fd, err := syscall.Open(filepath.Join(dir, "pids.current"), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if cg.pidsFDs == nil {
		cg.pidsFDs = map[int]int{}
	}
	cg.pidsFDs[i] = fd
	return fd, nil
}

// closePidsFDs closes the kept pids.current files (before the cgroups
// are removed).
func (cg *cgroups) closePidsFDs() {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	for i, fd := range cg.pidsFDs {
		syscall.Close(fd)
		delete(cg.pidsFDs, i)
	}
}

// killPids SIGKILLs the pids listed one a line, never this process (one
// of whose threads may sit in a v1 cgroup for a fork).
func killPids(list []byte) int {
	n := 0
	self := os.Getpid()
	for _, f := range bytes.Fields(list) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 1 && pid != self {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}
