#!/usr/bin/env bash
# bench/slurm.sh: 1,000 requested `true` tasks through Slurm pilots
# (batchd pool slurm) against the same 1,000 tasks as a Slurm job array
# (sbatch --array=1-1000 --wrap true), on a one-node test cluster that
# e2e/slurm/start.sh starts for the run and stop.sh stops, in the same run.
# Prints both rates, their ratio and the time
# from the pilot's start to the first result (target: <= 1 s), with the
# load average. Needs root (slurmd) and Slurm (start.sh installs it).
#
#   bench/slurm.sh [TASKS] [CPUS]     # default 1000 tasks, 4 virtual CPUs
#   SLURM_PROFILE=throughput bench/slurm.sh   # against a Slurm tuned for
#                                     # throughput (e2e/slurm/throughput.conf)
#
# The pool runs one pilot holding all CPUS slots; the array's elements each
# take one CPU, so both have the same CPUs. batchd serve runs with no local
# slots and no speculation.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks="${1:-1000}"
cpus="${2:-4}"
command -v python3 >/dev/null || { echo "bench/slurm.sh: needs python3 to read JSON" >&2; exit 1; }

work="$(mktemp -d /tmp/batchd-bench-slurm.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  e2e/slurm/stop.sh "$work/slurm" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "slurm profile: ${SLURM_PROFILE:-test}; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
go build -o "$work/bin/" ./cmd/batchd ./cmd/batchctl
e2e/slurm/start.sh "$work/slurm" "$cpus" >/dev/null
export SLURM_CONF="$work/slurm/slurm.conf"

"$work/bin/batchd" serve --listen 127.0.0.1:0 --data "$work/data" --slots 0 --speculation none >"$work/serve.log" 2>&1 &
pids+=($!)
url=""
for _ in $(seq 1 600); do
  url="$(sed -n 's/^batchd serving on \(http:[^ ]*\).*/\1/p' "$work/serve.log" | head -1)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "batchd serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
ctl() { "$work/bin/batchctl" --server "$url" --data "$work/data" --config /dev/null "$@"; }
BATCH_WORKER_TOKEN="$("$work/bin/batchd" user add --data "$work/data" --worker bench-pool 2>/dev/null)"
export BATCH_WORKER_TOKEN
for _ in $(seq 1 "$tasks"); do echo true; done >"$work/tasks.txt"
now() { date +%s.%N; }

# --- pilots: the request comes first; the pool sees it and submits.
mkdir -p "$work/pilots"
"$work/bin/batchd" pool slurm --server "$url" --slots "$cpus" --max-pilots 1 --idle 10s --interval 200ms \
  --chdir "$work/pilots" --cancel-on-exit >"$work/pool.log" 2>&1 &
pool=$!
pids+=($pool)
t0="$(now)"
set_id="$(ctl --json disclose --request --name bench --file "$work/tasks.txt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["set"]["id"])')"
while :; do
  fin="$(ctl --json status --limit 1 "$set_id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["set"]["counts"]["finished"])')"
  [ "$fin" -ge "$tasks" ] && break
  sleep 0.1
done
t1="$(now)"
# First result: the earliest executed_at against the pilot's "worker started".
first="$(ctl --json status --limit "$tasks" "$set_id" | python3 -c '
import json, sys
from datetime import datetime
ts = [t["executed_at"] for t in json.load(sys.stdin)["tasks"] if t.get("executed_at")]
print(min(datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp() for x in ts))')"
started="$(grep -h 'msg="worker started"' "$work"/pilots/batchd-pilot-*.out | head -1 | sed 's/^time=\([^ ]*\) .*/\1/' | python3 -c '
import sys
from datetime import datetime
print(datetime.fromisoformat(sys.stdin.read().strip().replace("Z", "+00:00")).timestamp())')"
kill "$pool"
wait "$pool" 2>/dev/null || true

# --- the array: every element a Slurm job running `true`.
t2="$(now)"
jid="$(sbatch --parsable --array=1-"$tasks" -o /dev/null --wrap true)"
jid="${jid%%;*}"
while [ -n "$(squeue -h -j "$jid" -t PENDING,RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null | head -1)" ]; do
  sleep 0.2
done
t3="$(now)"
done_n="$(squeue -h -j "$jid" -t COMPLETED -o %i | wc -l)"

python3 - "$tasks" "$t0" "$t1" "$t2" "$t3" "$started" "$first" "$done_n" <<'EOF'
import sys
n, t0, t1, t2, t3, started, first, done = int(sys.argv[1]), *map(float, sys.argv[2:8]), int(sys.argv[8])
pilots, array = t1 - t0, t3 - t2
print(f"pilots: {n} tasks in {pilots:.2f} s ({n / pilots:.1f} tasks/s), request to last result, pilot submission included")
print(f"array:  {n} tasks in {array:.2f} s ({n / array:.1f} tasks/s), sbatch to last element ended ({done} seen COMPLETED)")
print(f"ratio:  {array / pilots:.2f}x (target >= 5x)")
print(f"first result: {first - started:.3f} s after the pilot's worker started (target <= 1 s)")
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
