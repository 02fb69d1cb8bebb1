package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"batchd/pool"
)

// workerEndsAt reads `batchd worker --ends-at`: "" (no end), "slurm"
// (the end of the Slurm job the worker runs in), Unix seconds or an
// RFC 3339 time.
func workerEndsAt(ctx context.Context, v string) (time.Time, error) {
	switch v {
	case "":
		return time.Time{}, nil
	case "slurm":
		return slurmJobEnd(ctx, os.Getenv, time.Now())
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--ends-at %q: want slurm, Unix seconds or an RFC 3339 time", v)
	}
	return t, nil
}

// slurmJobEnd is when the Slurm job the process runs in reaches its time
// limit: SLURM_JOB_END_TIME when Slurm sets it, else squeue's end time
// (%e) for SLURM_JOB_ID, else its time left (%L) from now. A job without
// a limit has no end (zero).
func slurmJobEnd(ctx context.Context, getenv func(string) string, now time.Time) (time.Time, error) {
	if v := getenv("SLURM_JOB_END_TIME"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return time.Unix(n, 0), nil
		}
	}
	id := getenv("SLURM_JOB_ID")
	if id == "" {
		return time.Time{}, fmt.Errorf("--ends-at slurm: not in a Slurm job (no SLURM_JOB_ID)")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-j", id, "-o", "%e|%L").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("--ends-at slurm: squeue -j %s: %w", id, err)
	}
	return parseSlurmEnd(strings.TrimSpace(string(out)), now)
}

// parseSlurmEnd reads squeue's "%e|%L" for one job.
func parseSlurmEnd(line string, now time.Time) (time.Time, error) {
	end, left, _ := strings.Cut(line, "|")
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", end, time.Local); err == nil {
		return t, nil
	}
	switch left {
	case "UNLIMITED", "NOT_SET", "INVALID", "":
		return time.Time{}, nil
	}
	d, err := pool.SlurmDuration(left)
	if err != nil {
		return time.Time{}, fmt.Errorf("--ends-at slurm: squeue said %q", line)
	}
	return now.Add(d), nil
}

// slurmMemoryMB is the memory, MiB, of the Slurm job the process runs in:
// SLURM_MEM_PER_NODE, else SLURM_MEM_PER_CPU times the job's CPUs on the
// node (SLURM_CPUS_ON_NODE). ok is false when Slurm gives neither.
func slurmMemoryMB(getenv func(string) string) (mb int64, ok bool) {
	if n, err := strconv.ParseInt(getenv("SLURM_MEM_PER_NODE"), 10, 64); err == nil && n > 0 {
		return n, true
	}
	per, err := strconv.ParseInt(getenv("SLURM_MEM_PER_CPU"), 10, 64)
	cpus, err2 := strconv.ParseInt(getenv("SLURM_CPUS_ON_NODE"), 10, 64)
	if err == nil && err2 == nil && per > 0 && cpus > 0 {
		return per * cpus, true
	}
	return 0, false
}
