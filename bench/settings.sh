#!/bin/sh
# bench/settings.sh: server settings compared on one build, alternated.
# Each argument is one setting, a string of `batchd serve` flags; each
# round runs BenchmarkPipeline at 64 and 16 slots (PIPELINE tasks, 5000)
# and BenchmarkDispatchUnderLoad/users (USERS ops, 3) once per setting,
# the settings in the given order in odd rounds and reversed in even
# ones, ROUNDS (3) rounds. It prints each run's figures as they come, then
# min / median / max per setting and figure, with the load before and
# after (docs/benchmarks.md, "Settings compared").
#
#   bench/settings.sh "--procs 8" "--procs 4" "--procs 6" "--procs 3"
#   ROUNDS=5 bench/settings.sh "" "--task-nice 10"
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/settings.sh SETTING SETTING..." >&2; exit 2; }
bin=$(mktemp -d)
out=$bin/out
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/batchd" ./cmd/batchd
go test -c -o "$bin/bench.test" ./bench/
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # setting, benchmark pattern, benchtime
	tag=$(echo "$1" | tr ' ' '_')
	BATCHD_BENCH_SERVE_ARGS="$1" BATCHD_BENCH_BIN="$bin/batchd" "$bin/bench.test" -test.run '^$' \
		-test.bench "$2" -test.benchtime "$3" -test.timeout 30m |
		sed -nE "s/^(Benchmark[^[:space:]]*)-[0-9]+/\1@[$tag]/p" | tee -a "$out"
}
for r in $(seq "${ROUNDS:-3}"); do
	if [ $((r % 2)) -eq 1 ]; then
		order=$(seq 1 $#)
	else
		order=$(seq $# -1 1)
	fi
	for i in $order; do
		eval "s=\${$i}"
		echo "round $r, [$s]: load $(cut -d' ' -f1 /proc/loadavg)"
		run "$s" 'Pipeline/slots=(64|16)$' "${PIPELINE:-5000}x"
		run "$s" 'DispatchUnderLoad/users$' "${USERS:-3}x"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "benchmark@[setting, spaces as _] / metric: min / median / max over the rounds"
awk -f bench/minmedmax.awk "$out"
