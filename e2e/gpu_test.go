package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUs runs tasks that ask for GPUs on a worker offering two (fake
// devices: only their indices exist): each copy's CUDA_VISIBLE_DEVICES
// names devices of its own, never one that a running copy holds (each
// copy takes a lock directory per device and logs a clash when it is
// taken); a copy asking for both gets "0,1" and one asking for none
// gets an empty list. `batchctl cluster` shows the worker's GPUs.
func TestGPUs(t *testing.T) {
	c := startServer(t, "--slots", "0", "--speculation", "none")
	c.startWorker("g", 4, "--gpus", "2")
	dir := t.TempDir()
	locks, log := filepath.Join(dir, "locks"), filepath.Join(dir, "log")
	if err := os.Mkdir(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, `d="$CUDA_VISIBLE_DEVICES"; mkdir %[1]s/"$d" || echo "clash on $d" >> %[2]s; echo "start $d" >> %[2]s; sleep 0.2; rmdir %[1]s/"$d"; echo "$d"`+"\n", locks, log)
	}
	var one jsonDisclose
	c.ctlJSON(&one, "disclose", "--request", "--name", "one-gpu", "--gpus", "1", "--file", writeFile(t, "gpu.txt", b.String()))
	var both, none jsonDisclose
	c.ctlJSON(&both, "disclose", "--request", "--name", "two-gpus", "--gpus", "2", "--", "sh", "-c", `echo "[$CUDA_VISIBLE_DEVICES]"`)
	c.ctlJSON(&none, "disclose", "--request", "--name", "no-gpu", "--", "sh", "-c", `echo "[${CUDA_VISIBLE_DEVICES-unset}]"`)
	waitFor(t, patience, "the GPU tasks to finish", func() bool {
		return setFinished(c, one.Set.ID, n) && setFinished(c, both.Set.ID, 1) && setFinished(c, none.Set.ID, 1)
	})
	used := map[string]int{}
	for i := range n {
		var out jsonOutput
		c.ctlJSON(&out, "output", fmt.Sprintf("%d/%d", one.Set.ID, i))
		d := strings.TrimSpace(out.Stdout)
		if out.ExitCode != 0 || (d != "0" && d != "1") {
			t.Errorf("task %d: exit %d, CUDA_VISIBLE_DEVICES %q; want 0, one device of 0 and 1", i, out.ExitCode, d)
		}
		used[d]++
	}
	if used["0"] == 0 || used["1"] == 0 {
		t.Errorf("devices used %v: want both", used)
	}
	logged, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logged), "clash") {
		t.Errorf("two running copies had the same device:\n%s", logged)
	}
	for _, tc := range []struct {
		set  int64
		want string
	}{{both.Set.ID, "[0,1]"}, {none.Set.ID, "[]"}} {
		var out jsonOutput
		c.ctlJSON(&out, "output", fmt.Sprintf("%d/0", tc.set))
		if got := strings.TrimSpace(out.Stdout); got != tc.want {
			t.Errorf("set %d: CUDA_VISIBLE_DEVICES %s, want %s", tc.set, got, tc.want)
		}
	}
	var cl struct {
		Workers []struct {
			ID   string `json:"id"`
			GPUs int32  `json:"gpus"`
		} `json:"workers"`
	}
	c.ctlJSON(&cl, "cluster")
	if len(cl.Workers) != 1 || cl.Workers[0].GPUs != 2 {
		t.Errorf("cluster: %+v, want worker g with 2 GPUs", cl.Workers)
	}
}
