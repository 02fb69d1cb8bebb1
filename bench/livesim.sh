#!/bin/sh
# bench/livesim.sh: the live server beside the simulator, for the same
# workload.
#
#   bench/livesim.sh                          # cluster and mixed, 4 speculation modes, 3 seeds
#   bench/livesim.sh -seeds 12 -keep DIR      # any flag of bench/livesim (go run ./bench/livesim -h)
#   go run ./bench/livesim report -keep DIR   # replay kept runs again, no servers
#
# For each workload and seed it starts, for each speculation mode at once
# (none, best-effort LATE, GRASS, hopper+grass; policy srpt×fcfs), a real
# `batchd serve` with two real `batchd worker`s of 8 slots (16 in all) on
# loopback, and drives it with the simulator's workload at that scale:
# cluster (jobs of 1–24 tasks, sizes bounded Pareto α 0.5, Poisson arrivals
# at 60% offered load for 45 s) or mixed (8 closed-loop batchactive users
# with sets of 1–4 such jobs, think time 6 s). The workers run unisolated
# (the tasks claim copy numbers in the run's directory). Every task is a
# child process that runs (sleeps, but not while stopped) a Pareto(β 1.259,
# scale 0.3 s) draw of its own per copy (capped at 60 s) and writes its
# progress. Then it replays what
# the store recorded with the real scheduler in virtual time, every copy
# drawing the same run time (sim; sim + overheads; sim + live, with the
# live server's latency rule and heartbeats), and prints live and
# simulated mean job completion time, the gain against best-effort LATE, β
# and speculative copies with 95% intervals over seeds, and the paired
# verdict: per seed live/sim, its geometric mean with a 95% interval and a
# sign test (progress per run on stderr). About 1 minute per workload and
# seed (the four modes' servers run at once).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/batchd" ./cmd/batchd
go build -o "$bin/livesim" ./bench/livesim
uptime
"$bin/livesim" -batchd "$bin/batchd" "$@"
uptime
