package worker

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// AllocatedMemoryMB is the memory, MiB, this process may use: the
// smaller of the machine's (MemTotal) and its cgroup's limit, where there
// is one. 0 when neither is known.
func AllocatedMemoryMB() int64 {
	return allocatedMemoryMB("/")
}

// allocatedMemoryMB is AllocatedMemoryMB with /proc and /sys/fs/cgroup
// read under root (tests give a fake tree).
func allocatedMemoryMB(root string) int64 {
	return smallestMB(memTotalMB(filepath.Join(root, "proc", "meminfo")), cgroupMemoryMB(root))
}

// smallestMB is the smallest positive figure, MiB; 0 when none is.
func smallestMB(figures ...int64) int64 {
	var min int64
	for _, f := range figures {
		if f > 0 && (min == 0 || f < min) {
			min = f
		}
	}
	return min
}

// noLimit is where a cgroup memory limit means none: cgroup v1 writes
// "no limit" as the largest page-aligned int64 (9223372036854771712).
const noLimit = 1 << 60

// cgroupMemoryMB is the memory limit, MiB, of the cgroup this process
// runs in, read under root: the smallest memory.max (cgroup v2) or
// memory.limit_in_bytes (v1) of its own cgroup and of every cgroup above
// it, since a parent's limit binds its children too (Slurm limits the
// job's cgroup, the process runs in a step's below it). A level whose
// directory is not there is skipped: inside a container without a cgroup
// namespace the mount shows the container's own cgroup as its root, and
// the levels above are not visible. "max" and huge values are no limit;
// 0 means none is found.
func cgroupMemoryMB(root string) int64 {
	own, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return 0
	}
	mnt := filepath.Join(root, "sys", "fs", "cgroup")
	v2path, v1path, v1ok, v2ok := "", "", false, false
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2path, v2ok = f[2], true
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1path, v1ok = f[2], true
			}
		}
	}
	// A v1 memory controller wins: on a hybrid system the v2 hierarchy
	// (at /sys/fs/cgroup/unified) has no memory controller.
	if v1ok {
		return levelsMB(filepath.Join(mnt, "memory"), v1path, "memory.limit_in_bytes")
	}
	if v2ok {
		if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
			return levelsMB(mnt, v2path, "memory.max")
		}
	}
	return 0
}

// levelsMB is the smallest limit, MiB, in file at cgroup p under mnt and
// at each cgroup above it; 0 when none is set.
func levelsMB(mnt, p, file string) int64 {
	var min int64
	for p = path.Clean("/" + p); ; p = path.Dir(p) {
		min = smallestMB(min, limitMB(filepath.Join(mnt, filepath.FromSlash(p), file)))
		if p == "/" {
			return min
		}
	}
}

// limitMB reads one cgroup memory limit file, in bytes, as MiB; 0 for
// none ("max", huge, missing or unreadable). A limit under 1 MiB counts
// as 1 MiB, not as none.
func limitMB(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= noLimit {
		return 0
	}
	return max(n>>20, 1)
}

// memTotalMB is MemTotal, MiB, from a meminfo file; 0 when unknown.
func memTotalMB(meminfo string) int64 {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
