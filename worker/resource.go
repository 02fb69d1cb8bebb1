package worker

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// machineMemoryMB is the machine's memory in MiB (MemTotal in
// /proc/meminfo), 0 when unknown.
func machineMemoryMB() int64 {
	f, err := os.Open("/proc/meminfo")
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

// cgroupStatus says why this worker does not enforce resource requests:
// whether cgroup v2 is there and writable by it. Enforcing them (a child
// cgroup per copy with memory.max and cpu.weight) is not built yet; where
// cgroup v2 is writable, that is the one thing missing.
func cgroupStatus() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		return "no cgroup v2 hierarchy at /sys/fs/cgroup (cgroup v1 or none)"
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "cannot read /proc/self/cgroup: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			dir := "/sys/fs/cgroup" + path
			if syscall.Access(dir, 2 /* W_OK */) != nil {
				return "cgroup v2 at " + dir + " is not writable by this worker"
			}
			return "cgroup v2 at " + dir + " is writable, but per-copy limits (memory.max, cpu.weight) are not built yet"
		}
	}
	return "this process is in no cgroup v2 group"
}
