#!/usr/bin/env bash
# bench/slurm.sh: 1,000 requested `true` tasks through Slurm pilots
# (batchd pool slurm) against the same 1,000 tasks run by Slurm itself,
# two ways: a job array (sbatch --array=1-1000 --wrap true) and 1,000
# `srun --exact` steps inside one allocation of the same CPUs, on a
# one-node cluster that e2e/slurm/start.sh starts for the run and stop.sh
# stops. The three are alternated: RUNS rounds, each running all three in
# a rotated order (pilots, array, steps; then array, steps, pilots; ...).
# Each round also measures request -> start with a pilot up (SAMPLES
# `batchctl disclose --request -- date +%s.%N`, from the command's start
# to the task's `date`) against srun's in the allocation (`srun --exact
# date +%s.%N` from the command's start). Prints every round, then
# min / median / max of each figure and of the ratios, with the load.
# Needs root (slurmd) and Slurm (start.sh installs it).
#
#   bench/slurm.sh [TASKS] [CPUS] [RUNS]    # default 1000 tasks, 4 virtual CPUs, 3 rounds
#   SLURM_PROFILE=throughput bench/slurm.sh # against a Slurm tuned for
#                                           # throughput (e2e/slurm/throughput.conf)
#   BIN=DIR bench/slurm.sh                  # batchd and batchctl from DIR, not built
#
# The pool runs one pilot holding all CPUS slots; the array's elements
# each take one CPU; the steps run CPUS at a time, one CPU each, in an
# allocation of CPUS CPUs: all three have the same CPUs. Each side's time
# runs from its submission (the request; sbatch) to its last result (the
# pilots: the last finish the server recorded; the time the poll saw it
# is printed too), the pilot's or the allocation's start included.
# batchd serve runs with no local slots and no speculation.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks="${1:-1000}"
cpus="${2:-4}"
runs="${3:-3}"
samples="${SAMPLES:-10}"
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

load() { cut -d' ' -f1 /proc/loadavg; }
# Slurm's own commands read SLURM_PROFILE as --profile: only start.sh
# gets it.
profile="${SLURM_PROFILE:-test}"
unset SLURM_PROFILE
echo "slurm profile: $profile; $tasks tasks, $cpus CPUs, $runs rounds; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${BIN:-}" ]; then
  mkdir -p "$work/bin" && cp "$BIN/batchd" "$BIN/batchctl" "$work/bin/"
else
  go build -o "$work/bin/" ./cmd/batchd ./cmd/batchctl
fi
SLURM_PROFILE="$profile" e2e/slurm/start.sh "$work/slurm" "$cpus" >/dev/null
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
jsonget() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# waitgone waits until Slurm runs nothing (the pilot, the array or the
# allocation of the previous side has left the CPUs).
waitgone() {
  while [ -n "$(squeue -h -t PENDING,RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null | head -1)" ]; do sleep 0.2; done
}

# pilots ROUND: the request comes first; the pool sees it and submits one
# pilot; then, with the pilot up, SAMPLES single-task requests.
pilots() {
  local r="$1" t0 t1 set_id fin
  mkdir -p "$work/pilots$r"
  # The worker's state directory is the run's own: another Slurm on the
  # same machine (job ids start at 1 in each) may run a pilot slurm-1 too.
  "$work/bin/batchd" pool slurm --server "$url" --name "p$r" --slots "$cpus" --max-pilots 1 --idle 60s --interval 200ms \
    --chdir "$work/pilots$r" --worker-arg=--state-dir="$work/pilots$r/state" --cancel-on-exit >"$work/pool$r.log" 2>&1 &
  local pool=$!
  pids+=($pool)
  t0="$(now)"
  set_id="$(ctl --json disclose --request --name "bench$r" --file "$work/tasks.txt" | jsonget 'd["set"]["id"]')"
  while :; do
    fin="$(ctl --json status --limit 1 "$set_id" | jsonget 'd["set"]["counts"]["finished"]')"
    [ "$fin" -ge "$tasks" ] && break
    sleep 0.1
  done
  polled="$(now)"
  # The end is the last task's finish as the server recorded it (the
  # steps' end is exact too), not when this poll saw it: at load 20-30
  # a poll (batchctl, python) lags 0.2-1 s. The first copy's start
  # (the pilot is up) is recorded beside it.
  ctl --json status --limit "$tasks" "$set_id" >"$work/set$r.json"
  read -r t1 first < <(python3 - "$work/set$r.json" <<'PY'
import datetime, json, sys
d = json.load(open(sys.argv[1]))
def ts(s):
    day, frac = (s.rstrip("Z").split(".") + ["0"])[:2]
    return datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + frac)
print(max(ts(t["finished_at"]) for t in d["tasks"]), min(ts(c["started_at"]) for t in d["tasks"] for c in t["copies"]))
PY
  )
  echo "$r pilots $(python3 -c "print($t1 - $t0)") $(load)" >>"$work/results"
  echo "$r pilot-up $(python3 -c "print($first - $t0)")" >>"$work/results"
  echo "$r pilots-polled $(python3 -c "print($polled - $t0)")" >>"$work/results"
  # Request -> start with the pilot up: each request waits for the last
  # to finish, so the pilot's slots are free.
  for _ in $(seq 1 "$samples"); do
    local ts s started
    ts="$(now)"
    s="$(ctl disclose -q --request --name "lat$r" -- date +%s.%N)"
    while [ "$(ctl --json status --limit 1 "$s" | jsonget 'd["set"]["counts"]["finished"]')" -lt 1 ]; do sleep 0.05; done
    started="$(ctl --json output "$s/0" | jsonget 'd["stdout"].strip()')"
    echo "$r pilot-start $(python3 -c "print($started - $ts)")" >>"$work/results"
  done
  kill "$pool"
  wait "$pool" 2>/dev/null || true
  waitgone
}

# array ROUND: every element a Slurm job running `true`.
array() {
  local r="$1" t0 t1 jid
  t0="$(now)"
  jid="$(sbatch --parsable --array=1-"$tasks" -o /dev/null --wrap true)"
  jid="${jid%%;*}"
  while [ -n "$(squeue -h -j "$jid" -t PENDING,RUNNING,COMPLETING,CONFIGURING -o %i 2>/dev/null | head -1)" ]; do
    sleep 0.2
  done
  t1="$(now)"
  echo "$r array $(python3 -c "print($t1 - $t0)") $(load)" >>"$work/results"
  waitgone
}

# steps ROUND: one allocation of CPUS CPUs runs TASKS `srun --exact true`
# steps, CPUS at a time, then SAMPLES `srun --exact date` one by one.
steps() {
  local r="$1" t0 t1
  rm -f "$work/steps.done" "$work/steps.lat"
  cat >"$work/steps.sh" <<EOF
#!/bin/sh
seq 1 $tasks | xargs -P $cpus -I{} srun --exact -n1 -c1 -Q true
date +%s.%N >"$work/steps.done"
for i in \$(seq 1 $samples); do
  ts=\$(date +%s.%N)
  st=\$(srun --exact -n1 -c1 -Q date +%s.%N)
  python3 -c "print(\$st - \$ts)" >>"$work/steps.lat"
done
EOF
  t0="$(now)"
  sbatch --parsable -n "$cpus" -c 1 -o "$work/steps$r.out" "$work/steps.sh" >/dev/null
  while [ ! -s "$work/steps.done" ]; do sleep 0.2; done
  t1="$(cat "$work/steps.done")"
  if grep -q error "$work/steps$r.out"; then
    echo "bench/slurm.sh: the steps failed:" >&2
    head "$work/steps$r.out" >&2
    exit 1
  fi
  echo "$r steps $(python3 -c "print($t1 - $t0)") $(load)" >>"$work/results"
  waitgone
  while read -r l; do echo "$r srun-start $l" >>"$work/results"; done <"$work/steps.lat"
}

order=(pilots array steps)
for r in $(seq 1 "$runs"); do
  for k in 0 1 2; do
    side="${order[$(((r - 1 + k) % 3))]}"
    "$side" "$r"
    echo "round $r: $(grep "^$r $side " "$work/results" | tail -1)"
  done
done

python3 - "$tasks" "$work/results" <<'EOF'
import statistics, sys
n, path = int(sys.argv[1]), sys.argv[2]
rows = [l.split() for l in open(path)]
by = {}
loads = []
for r in rows:
    by.setdefault(r[1], {}).setdefault(int(r[0]), []).append(float(r[2]))
    if len(r) > 3:
        loads.append(float(r[3]))
def mmm(xs, fmt="{:.2f}"):
    xs = sorted(xs)
    return " / ".join(fmt.format(x) for x in (xs[0], statistics.median(xs), xs[-1]))
t = {k: {r: v[0] for r, v in by[k].items()} for k in ("pilots", "array", "steps")}
for k in ("pilots", "array", "steps"):
    xs = list(t[k].values())
    print(f"{k:7s} {n} tasks: {mmm(xs)} s  ({mmm([n / x for x in xs], '{:.1f}')} tasks/s)  min/median/max of {len(xs)}")
rounds = sorted(t["pilots"])
print(f"pilots: request -> first copy started (pilot up): {mmm([x for v in by['pilot-up'].values() for x in v])} s")
print(f"ratio array / pilots (same round): {mmm([t['array'][r] / t['pilots'][r] for r in rounds])}x")
print(f"ratio steps / pilots (same round): {mmm([t['steps'][r] / t['pilots'][r] for r in rounds])}x")
polled = {r: v[0] for r, v in by["pilots-polled"].items()}
print(f"pilots' end as the poll saw it: {mmm(list(polled.values()))} s; ratios array / pilots {mmm([t['array'][r] / polled[r] for r in rounds])}x, steps / pilots {mmm([t['steps'][r] / polled[r] for r in rounds])}x")
ps = [x * 1000 for v in by["pilot-start"].values() for x in v]
ss = [x * 1000 for v in by["srun-start"].values() for x in v]
print(f"request -> start, pilot up: {mmm(ps, '{:.1f}')} ms; srun step: {mmm(ss, '{:.1f}')} ms ({len(ps)} and {len(ss)} samples)")
meds = [statistics.median(by["pilot-start"][r]) / statistics.median(by["srun-start"][r]) for r in rounds]
print(f"ratio of medians, pilot / srun (same round): {mmm(meds)}")
print(f"load average (1 min) at each side's end: {min(loads):.1f} to {max(loads):.1f}")
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
