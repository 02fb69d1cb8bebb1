#!/bin/sh
# bench/dispatch.sh: the dispatch path's figures (docs/benchmarks.md), each
# run three times and summed up as min / median / max per metric, with the
# load average before and after.
#
#   bench/dispatch.sh          # everything, about 15 minutes on 2 cores
#   bench/dispatch.sh quick    # pipeline, the agent alone (worker's
#                              # BenchmarkCopies) and request -> start only
#   bench/dispatch.sh pipeline BASE  # the pipeline at 64 and 16 slots, this
#                                    # tree's build alternated with BASE's
#                                    # (a git revision), ROUNDS (3) rounds
#
# Run it on a quiet machine: every figure is a ratio against a baseline
# measured in the same run, or a time and a size of batchd's own.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${1:-}" = pipeline ]; then
	# Two builds alternated on one machine: odd rounds run BASE's then
	# this tree's, even rounds the other way round, so the load each sees
	# is about the same, even while it rises or falls through the run.
	base=${2:?usage: bench/dispatch.sh pipeline BASE}
	bin=$(mktemp -d)
	trap 'rm -rf "$out" "$bin"' EXIT
	mkdir "$bin/src"
	git archive "$base" | tar -x -C "$bin/src"
	(cd "$bin/src" && go build -o "$bin/batchd-base" ./cmd/batchd)
	go build -o "$bin/batchd-this" ./cmd/batchd
	go test -c -o "$bin/bench.test" ./bench/
	for r in $(seq "${ROUNDS:-3}"); do
		order="base this"
		if [ $((r % 2)) -eq 0 ]; then
			order="this base"
		fi
		for b in $order; do
			echo "round $r, $b: load $(cut -d' ' -f1 /proc/loadavg)"
			BATCHD_BENCH_BIN="$bin/batchd-$b" "$bin/bench.test" -test.run '^$' -test.bench 'Pipeline/slots=(64|16)$' \
				-test.benchtime 2000x | sed -E "s/^(Benchmark[^[:space:]]*)-[0-9]+/\1@$b/" | tee -a "$out"
		done
	done
else
	go test -run '^$' -bench 'Pipeline|RequestToStart' -benchtime 2000x -count 3 ./bench/ | tee -a "$out"
	# The agent alone on the same slots (worker.BenchmarkCopies): the part
	# of the pipeline's bookkeeping that is the worker's, not the server's.
	go test -run '^$' -bench 'Copies/' -benchtime 2000x -count 3 ./worker/ | tee -a "$out"
fi
if [ "${1:-}" != quick ] && [ "${1:-}" != pipeline ]; then
	# Three alone/loaded pairs per run: a p99 over about 1,000 calls, not 300.
	go test -run '^$' -bench DispatchUnderLoad -benchtime 3x -count 3 -timeout 60m ./bench/ | tee -a "$out"
	go test -run '^$' -bench MillionQueued -benchtime 1x -count 3 -timeout 60m ./bench/ | tee -a "$out"
	go test -run '^$' -bench BigSet -benchtime 1x -count 3 ./server/ | tee -a "$out"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "benchmark / metric: min / median / max over the runs"
awk -f bench/minmedmax.awk "$out"
