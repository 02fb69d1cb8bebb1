package worker

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultStateDir is the state directory of a worker named name when
// Config.StateDir is empty.
func DefaultStateDir(name string) string {
	return filepath.Join(os.TempDir(), "batchd-worker-"+name)
}

// KillLeftovers SIGKILLs every process left of the copies of the worker
// whose state directory is stateDir, and returns how many it killed. A
// worker's death takes its copies' leaders with it (Pdeathsig), but not
// what they forked: without a cgroup those run on, reparented to init,
// where a batch system that tracks a job's processes by parentage no
// longer finds them. A pilot's script calls it (batchd worker
// --kill-leftovers) once its worker has ended, however it ended.
func KillLeftovers(stateDir string) (int, error) {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return 0, err
	}
	roots := []string{filepath.Join(dir, "copies")}
	if b, err := os.ReadFile(filepath.Join(dir, "scratch-root")); err == nil {
		if old := strings.TrimSpace(string(b)); old != "" && filepath.IsAbs(old) {
			roots = append(roots, old)
		}
	}
	n := 0
	for _, root := range roots {
		k, err := killLeftovers(root + string(filepath.Separator))
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
