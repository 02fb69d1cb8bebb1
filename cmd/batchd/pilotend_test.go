package main

import (
	"testing"
	"time"
)

// A pilot's end comes from Slurm's environment, else squeue's end time,
// else its time left; a job without a limit has none.
func TestSlurmJobEnd(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	end, err := slurmJobEnd(t.Context(), env(map[string]string{"SLURM_JOB_END_TIME": "1800000000", "SLURM_JOB_ID": "7"}), now)
	if err != nil || end.Unix() != 1_800_000_000 {
		t.Errorf("SLURM_JOB_END_TIME: %v, %v", end, err)
	}
	if _, err := slurmJobEnd(t.Context(), env(nil), now); err == nil {
		t.Errorf("outside a job: no error")
	}
	for _, tc := range []struct {
		line string
		want time.Time
	}{
		{"2026-01-02T04:04:05|59:00", now.Add(time.Hour)},
		{"N/A|1:30:00", now.Add(90 * time.Minute)},
		{"N/A|2-00:00:00", now.Add(48 * time.Hour)},
		{"Unknown|UNLIMITED", time.Time{}},
	} {
		got, err := parseSlurmEnd(tc.line, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseSlurmEnd(%q) = %v, %v; want %v", tc.line, got, err, tc.want)
		}
	}
	if _, err := parseSlurmEnd("what|ever", now); err == nil {
		t.Errorf("nonsense accepted")
	}
}

// A pilot offers its job's memory: per node, else per CPU times its CPUs.
func TestSlurmMemory(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want int64
		ok   bool
	}{
		{map[string]string{"SLURM_MEM_PER_NODE": "4096"}, 4096, true},
		{map[string]string{"SLURM_MEM_PER_CPU": "1000", "SLURM_CPUS_ON_NODE": "3"}, 3000, true},
		{map[string]string{"SLURM_MEM_PER_CPU": "1000"}, 0, false},
		{nil, 0, false},
	} {
		if got, ok := slurmMemoryMB(env(tc.env)); got != tc.want || ok != tc.ok {
			t.Errorf("slurmMemoryMB(%v) = %d %v, want %d %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
