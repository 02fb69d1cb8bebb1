#!/usr/bin/env bash
# Starts a one-node Slurm cluster for trying `batchd pool slurm` and for the
# e2e test: munged, slurmctld and slurmd as child processes of this script,
# run as root, with every file (config, key, state, logs, sockets, PIDs)
# under DIR. Installs Debian's slurm-wlm and munge with apt when missing.
#
#   e2e/slurm/start.sh DIR [CPUS]     # default DIR ./slurm-test, CPUS 4
#   SLURM_PROFILE=throughput e2e/slurm/start.sh DIR   # a Slurm tuned for throughput (throughput.conf)
#   export SLURM_CONF=DIR/slurm.conf  # then sbatch, squeue, scancel, batchd pool slurm
#   e2e/slurm/stop.sh DIR             # stops exactly the PIDs recorded in DIR/pids
#
# The node offers CPUS virtual CPUs whatever the machine has
# (SlurmdParameters=config_overrides). Two partitions share it:
#   high  default, PriorityTier=10, never preempted
#   low   PriorityTier=1, PreemptMode=CANCEL with GraceTime=10: a job in
#         `high` that needs its CPUs preempts a `low` job (SIGTERM, then
#         SIGKILL 10 s later)
# The daemons listen on loopback ports picked free at start below the
# kernel's ephemeral port range (SLURMCTLD_PORT and SLURMD_PORT override
# them); when a daemon fails, the message names it and its port.
set -euo pipefail

dir="${1:-./slurm-test}"
cpus="${2:-4}"
here="$(cd "$(dirname "$0")" && pwd)"

if [ "$(id -u)" != 0 ]; then
  echo "start.sh: run as root (slurmd must start jobs as their users)" >&2
  exit 1
fi

need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || need+=(munge)
if ((${#need[@]})); then
  echo "start.sh: apt-get install ${need[*]}" >&2
  apt-get update -qq
  # The packages would start their own daemons (and fail without a site
  # config): a policy-rc.d keeps them from starting during the install.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  [ -z "$policy" ] || rm -f "$policy"
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ -s "$dir/pids" ]; then
  alive=""
  while read -r name pid; do
    kill -0 "$pid" 2>/dev/null && alive="$alive $name=$pid"
  done <"$dir/pids"
  if [ -n "$alive" ]; then
    echo "start.sh: $dir already runs a cluster ($alive): run e2e/slurm/stop.sh $dir first" >&2
    exit 1
  fi
fi
rm -f "$dir/pids"
# munged refuses group- or world-writable directories on its paths.
chmod 0755 "$dir"
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 0700 "$dir/munge" "$dir/state" "$dir/spool"

# A free loopback TCP port below the kernel's ephemeral range (which the
# kernel hands out to outgoing connections at any moment, so a port that
# is free there now may be taken by the time a daemon binds it), not held
# by any socket now (/proc/net/tcp and tcp6 list every local port in use,
# listening or connected) and not already picked by this script.
eph_low="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
port_hi=$((eph_low - 1))
port_lo=$((port_hi > 12000 ? port_hi - 10000 : 1024))
picked=""
port_in_use() {
  local hex
  hex="$(printf '%04X' "$1")"
  case " $picked " in *" $1 "*) return 0 ;; esac
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h="$hex" 'NR > 0 { split($2, a, ":"); if (a[2] == h) { found = 1 } } END { exit !found }'
}
free_port() {
  local p
  for _ in $(seq 1 500); do
    p=$((port_lo + RANDOM % (port_hi - port_lo + 1)))
    if ! port_in_use "$p"; then
      echo "$p"
      return
    fi
  done
  echo "start.sh: no free port in $port_lo-$port_hi (below the ephemeral range, /proc/sys/net/ipv4/ip_local_port_range)" >&2
  exit 1
}
ctld_port="${SLURMCTLD_PORT:-$(free_port)}"
picked="$ctld_port"
slurmd_port="${SLURMD_PORT:-$(free_port)}"
node="$(hostname -s)"
# The scheduler's settings: the test cluster's slow cycle, or with
# SLURM_PROFILE=throughput those of e2e/slurm/throughput.conf (a Slurm
# tuned to start many short jobs fast, each setting explained there).
case "${SLURM_PROFILE:-test}" in
  test) sched_params="SchedulerParameters=sched_interval=2,bf_interval=2" ;;
  throughput) sched_params="$(grep '^SchedulerParameters=' "$here/throughput.conf")" ;;
  *)
    echo "start.sh: SLURM_PROFILE must be test or throughput, not '$SLURM_PROFILE'" >&2
    exit 1
    ;;
esac

if [ ! -s "$dir/munge/munge.key" ]; then
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
fi
chmod 0400 "$dir/munge/munge.key"

cat >"$dir/slurm.conf" <<CONF
# Written by e2e/slurm/start.sh: a one-node test cluster under $dir.
ClusterName=batchd-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
# Short test cycles: ended jobs stay visible 5 minutes; SIGTERM, then
# SIGKILL after KillWait seconds on scancel.
MinJobAge=300
KillWait=10
InactiveLimit=0
SlurmdTimeout=300
$sched_params
# Preemption with a GraceTime sends the job's --signal (pilots: B:TERM, to
# the batch shell only, which passes it to the worker) instead of SIGTERM
# to every process: the worker hands its copies back before any of them
# sees the signal, as at the time limit.
SlurmctldParameters=preempt_send_user_signal
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
# Two GPUs that are only device nodes under DIR/dev (no GPU is needed):
# a job's --gres=gpu:N gets CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS.
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=high Nodes=$node Default=YES MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
PartitionName=low Nodes=$node MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=CANCEL GraceTime=10
CONF
: >"$dir/cgroup.conf"
mkdir -p "$dir/dev"
# Slurm wants character devices: these are /dev/null's and /dev/zero's.
[ -c "$dir/dev/nvidia0" ] || mknod "$dir/dev/nvidia0" c 1 3
[ -c "$dir/dev/nvidia1" ] || mknod "$dir/dev/nvidia1" c 1 5
echo "NodeName=$node Name=gpu File=$dir/dev/nvidia[0-1]" >"$dir/gres.conf"

record() { echo "$1 $2" >>"$dir/pids"; }

munged -F --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
  </dev/null >>"$dir/log/munged.out" 2>&1 &
record munged $!
for _ in $(seq 1 100); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
if [ ! -S "$dir/munge/munge.socket" ]; then
  echo "start.sh: munged did not start; see $dir/log/munged.log" >&2
  "$here/stop.sh" "$dir" >/dev/null 2>&1 || true
  exit 1
fi

export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -i -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
record slurmctld $!
slurmd -D -N "$node" -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmd.out" 2>&1 &
record slurmd $!

# Up when the node is idle (or mixed/allocated after a restart).
for _ in $(seq 1 300); do
  st="$(sinfo -h -n "$node" -o '%T' 2>/dev/null | head -1 || true)"
  case "$st" in idle* | mixed* | alloc*) break ;; esac
  # A daemon that exited will not come back: say so now.
  dead=""
  while read -r name pid; do kill -0 "$pid" 2>/dev/null || dead=1; done <"$dir/pids"
  [ -z "$dead" ] || break
  sleep 0.2
done
st="$(sinfo -h -n "$node" -o '%T' 2>/dev/null | head -1 || true)"
case "$st" in
  idle* | mixed* | alloc*) ;;
  *)
    # Say which daemon failed and why, naming its port.
    why=""
    while read -r name pid; do
      case "$name" in
        slurmctld) port="$ctld_port" log="$dir/log/slurmctld.log" ;;
        slurmd) port="$slurmd_port" log="$dir/log/slurmd.log" ;;
        *) port="" log="$dir/log/$name.log" ;;
      esac
      if ! kill -0 "$pid" 2>/dev/null; then
        why="$why; $name (pid $pid) exited"
      fi
      if [ -n "$port" ] && grep -qs "Address already in use" "$log" "$dir/log/$name.out"; then
        why="$why; $name could not bind port $port: Address already in use"
      fi
    done <"$dir/pids"
    echo "start.sh: node $node is '${st:-unknown}'${why:-" after 60 s"}; logs in $dir/log" >&2
    for f in slurmctld slurmd; do
      echo "--- last lines of $dir/log/$f.log:" >&2
      tail -n 5 "$dir/log/$f.log" >&2 2>/dev/null || true
    done
    "$here/stop.sh" "$dir" >/dev/null 2>&1 || true
    exit 1
    ;;
esac
echo "slurm up in $dir: node $node, $cpus CPUs, partitions high (default) and low (preemptible); PIDs in $dir/pids"
echo "export SLURM_CONF=$dir/slurm.conf"
