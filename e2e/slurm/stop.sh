#!/usr/bin/env bash
# Stops the cluster e2e/slurm/start.sh DIR started: exactly the PIDs it
# recorded in DIR/pids (SIGTERM, then SIGKILL after 10 s), slurmd first.
# Jobs still running get the usual end (their slurmstepd is killed too).
#
#   e2e/slurm/stop.sh DIR     # default DIR ./slurm-test
set -euo pipefail
dir="${1:-./slurm-test}"
if [ ! -s "$dir/pids" ]; then
  echo "stop.sh: no $dir/pids: nothing started there" >&2
  exit 0
fi
# Ends the slurmstepd processes of jobs still running on this node's spool
# (children of slurmd's jobs, not of this script): scancel them first.
if [ -s "$dir/slurm.conf" ] && command -v scancel >/dev/null 2>&1; then
  SLURM_CONF="$dir/slurm.conf" timeout 20 scancel --quiet --full --signal=KILL --state=RUNNING "--user=$(id -un)" 2>/dev/null || true
  SLURM_CONF="$dir/slurm.conf" timeout 20 scancel --quiet "--user=$(id -un)" 2>/dev/null || true
fi
pids=()
for name in slurmd slurmctld munged; do
  pid="$(awk -v n="$name" '$1 == n {print $2}' "$dir/pids")"
  [ -n "$pid" ] || continue
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
  fi
  # Wait for each in turn: slurmd before slurmctld before munged.
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
done
rm -f "$dir/pids"
echo "slurm in $dir stopped (${#pids[@]} processes)"
