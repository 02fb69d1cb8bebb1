package main

// workerPartition is the partition a worker registers in for --partition
// v: "slurm" is its Slurm job's (SLURM_JOB_PARTITION; none outside a
// job), anything else itself.
func workerPartition(v string, getenv func(string) string) string {
	if v == "slurm" {
		return getenv("SLURM_JOB_PARTITION")
	}
	return v
}
