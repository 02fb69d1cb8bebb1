package main

import (
	"fmt"
	"strconv"
	"strings"
)

// workerGPUs reads batchd worker's --gpus: "" or "0" for none; N for
// devices 0 to N-1; a comma-separated list of device indices or UUIDs;
// or "slurm" for the Slurm job's allocation (CUDA_VISIBLE_DEVICES, which
// Slurm sets for a job with GPUs, else SLURM_JOB_GPUS; none outside such
// a job).
func workerGPUs(v string, getenv func(string) string) ([]string, error) {
	switch {
	case v == "" || v == "0":
		return nil, nil
	case v == "slurm":
		for _, k := range []string{"CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"} {
			if devs := splitDevices(getenv(k)); len(devs) > 0 {
				return devs, nil
			}
		}
		return nil, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > 1024 {
			return nil, fmt.Errorf("--gpus %d: want 0 to 1024", n)
		}
		devs := make([]string, n)
		for i := range devs {
			devs[i] = strconv.Itoa(i)
		}
		return devs, nil
	}
	devs := splitDevices(v)
	if len(devs) == 0 {
		return nil, fmt.Errorf("--gpus %q: want N, a list of devices (0,1 or UUIDs) or slurm", v)
	}
	return devs, nil
}

// splitDevices splits a comma-separated device list, dropping empty
// entries and the "NoDevFiles" CUDA_VISIBLE_DEVICES Slurm sets for a
// GPU without a device file.
func splitDevices(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.TrimSpace(d); d != "" && d != "NoDevFiles" {
			out = append(out, d)
		}
	}
	return out
}
