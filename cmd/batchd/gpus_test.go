package main

import (
	"slices"
	"testing"
)

func TestWorkerGPUs(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := env(nil)
	for _, tc := range []struct {
		v    string
		env  func(string) string
		want []string
	}{
		{"", none, nil},
		{"0", none, nil},
		{"2", none, []string{"0", "1"}},
		{"1,3", none, []string{"1", "3"}},
		{"GPU-a, GPU-b", none, []string{"GPU-a", "GPU-b"}},
		{"slurm", none, nil},
		{"slurm", env(map[string]string{"SLURM_JOB_GPUS": "2,3"}), []string{"2", "3"}},
		{"slurm", env(map[string]string{"SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0,1"}), []string{"0", "1"}},
		{"slurm", env(map[string]string{"CUDA_VISIBLE_DEVICES": "NoDevFiles", "SLURM_JOB_GPUS": "5"}), []string{"5"}},
	} {
		got, err := workerGPUs(tc.v, tc.env)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("workerGPUs(%q) = %v, %v; want %v", tc.v, got, err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "2000", ","} {
		if _, err := workerGPUs(bad, none); err == nil {
			t.Errorf("workerGPUs(%q): no error", bad)
		}
	}
}
