package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestSlurmPilotResources runs a task that asks for a GPU through a pool
// whose pilots ask for memory, on the real Slurm whose node has two GPUs
// (device nodes only): the pilot's job asks for the memory (MinMemoryNode)
// and, since the queued task needs one, a GPU (--gres=gpu:1); its worker
// offers what Slurm gave the job (SLURM_MEM_PER_NODE, and the GPU Slurm
// named in CUDA_VISIBLE_DEVICES), and the task sees that GPU.
func TestSlurmPilotResources(t *testing.T) {
	s := startSlurm(t)
	c := startServer(t, "--slots", "0", "--speculation", "none")
	pool := startPool(t, c, "res", "--max-pilots", "1", "--idle", "30s", "--mem", "100M")
	defer pool.stop()
	var d jsonDisclose
	c.ctlJSON(&d, "disclose", "--request", "--name", "gpu", "--gpus", "1", "--", "sh", "-c", `echo "[$CUDA_VISIBLE_DEVICES]"`)
	waitFor(t, patience, "the GPU task to finish on a pilot", func() bool { return setFinished(c, d.Set.ID, 1) })
	var out jsonOutput
	c.ctlJSON(&out, "output", fmt.Sprintf("%d/0", d.Set.ID))
	if got := strings.TrimSpace(out.Stdout); out.ExitCode != 0 || got != "[0]" {
		t.Errorf("task: exit %d, CUDA_VISIBLE_DEVICES %s; want 0 and [0]", out.ExitCode, got)
	}
	pilots := s.pilots("res")
	if len(pilots) != 1 {
		t.Fatalf("pilots %+v, want one", pilots)
	}
	job := s.run("scontrol", "show", "job", pilots[0].id)
	for _, want := range []string{"MinMemoryNode=100M", "gpu:1"} {
		if !strings.Contains(job, want) {
			t.Errorf("the pilot's job lacks %s:\n%s", want, job)
		}
	}
	var cl struct {
		Workers []struct {
			ID       string `json:"id"`
			MemoryMB int64  `json:"memory_mb"`
			GPUs     int32  `json:"gpus"`
		} `json:"workers"`
	}
	c.ctlJSON(&cl, "cluster", "--all")
	found := false
	for _, w := range cl.Workers {
		if w.ID == "slurm-"+pilots[0].id {
			found = true
			if w.MemoryMB != 100 || w.GPUs != 1 {
				t.Errorf("pilot's worker offers %d MiB and %d GPUs, want its job's 100 MiB and 1 GPU", w.MemoryMB, w.GPUs)
			}
		}
	}
	if !found {
		t.Errorf("cluster --all: %+v, want the pilot's worker slurm-%s", cl.Workers, pilots[0].id)
	}
}
