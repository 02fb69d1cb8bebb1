package worker

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRegisterOffersMemory: the agent offers its allocation (the
// machine's memory, or its cgroup's limit where smaller) by default, what
// Config.MemoryMB says otherwise, none when it is negative;
// it registers its isolation and its limits, and says once, in its log,
// that its tasks are not isolated (the tests' agents run with none).
func TestRegisterOffersMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  int64
		want func(int64) bool
	}{
		{0, func(m int64) bool { return m > 0 && m == AllocatedMemoryMB() }},
		{2048, func(m int64) bool { return m == 2048 }},
		{-1, func(m int64) bool { return m == 0 }},
	} {
		var log bytes.Buffer
		b := setupWith(t, nil, func(c *Config) {
			c.MemoryMB = tc.cfg
			c.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
		})
		b.srv.mu.Lock()
		got := b.srv.registers[0].GetMemoryMb()
		iso, limits := b.srv.registers[0].GetIsolation(), b.srv.registers[0].GetLimits()
		b.srv.mu.Unlock()
		if iso != "none" || limits == "" {
			t.Errorf("registered isolation %q, limits %q; want none and some limits", iso, limits)
		}
		if !tc.want(got) {
			t.Errorf("Config.MemoryMB %d: registered %d MiB", tc.cfg, got)
		}
		if err := b.stop(); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(log.String(), "NOT ISOLATED"); n != 1 {
			t.Errorf("the log says %d times that tasks are not isolated, want once:\n%s", n, log.String())
		}
	}
}

// syncWriter serializes writes to w (the agent logs from several
// goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// fakeRoot writes files (path relative to the root -> content) under a
// new temporary root.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestAllocatedMemory: the allocation is the smallest of the machine's
// memory and the memory limits of the process's cgroup and of every
// cgroup above it, on cgroup v2, v1 and a hybrid of both; "max", v1's
// "unlimited" figure, missing levels and missing files mean no limit.
func TestAllocatedMemory(t *testing.T) {
	t.Parallel()
	const meminfo = "MemTotal:       24683656 kB\nMemFree:         1000000 kB\n" // 24,105 MiB
	const v1max = "9223372036854771712\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"NoCgroup", map[string]string{"proc/meminfo": meminfo}, 24105},
		{"NothingKnown", map[string]string{}, 0},
		{"V2Own", map[string]string{
			"proc/meminfo":                              meminfo,
			"proc/self/cgroup":                          "0::/job_7/step_batch\n",
			"sys/fs/cgroup/cgroup.controllers":          "cpu memory pids\n",
			"sys/fs/cgroup/job_7/memory.max":            "max\n",
			"sys/fs/cgroup/job_7/step_batch/memory.max": "104857600\n",
		}, 100},
		{"V2Parent", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0\n",
			"sys/fs/cgroup/cgroup.controllers": "cpu memory pids\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max":                        "209715200\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_batch/memory.max":             "max\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0/memory.max": "max\n",
		}, 200},
		{"V2Max", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/a/b\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/a/memory.max":       "max\n",
			"sys/fs/cgroup/a/b/memory.max":     "max\n",
		}, 24105},
		{"V2OverMachine", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/a\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/a/memory.max":       "68719476736\n", // 64 GiB
		}, 24105},
		{"V2NotMounted", map[string]string{
			"proc/meminfo":               meminfo,
			"proc/self/cgroup":           "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "104857600\n",
		}, 24105},
		{"V1", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/slurm/uid_0/job_7/step_batch\n3:cpu,cpuacct:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                              v1max,
			"sys/fs/cgroup/memory/slurm/memory.limit_in_bytes":                        v1max,
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/memory.limit_in_bytes":            "314572800\n",
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/step_batch/memory.limit_in_bytes": v1max,
		}, 300},
		{"V1Unlimited", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/process_api/07ef\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  v1max,
			"sys/fs/cgroup/memory/process_api/07ef/memory.limit_in_bytes": v1max,
		}, 24105},
		{"Hybrid", map[string]string{
			// v2 mounted at unified without the memory controller; v1 has it.
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "5:memory:/box\n0::/box\n",
			"sys/fs/cgroup/unified/cgroup.controllers":       "\n",
			"sys/fs/cgroup/memory/box/memory.limit_in_bytes": "1073741824\n",
		}, 1024},
		{"ContainerRootOnly", map[string]string{
			// No cgroup namespace: the process's path is not under the
			// mount, whose root is the container's own cgroup.
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n",
		}, 512},
		{"UnderOneMiB", map[string]string{
			"proc/self/cgroup":                 "0::/a\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/a/memory.max":       "4096\n",
		}, 1},
		{"Garbage", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/a\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/a/memory.max":       "lots\n",
		}, 24105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := allocatedMemoryMB(fakeRoot(t, tc.files)); got != tc.want {
				t.Errorf("allocated %d MiB, want %d", got, tc.want)
			}
		})
	}
}
