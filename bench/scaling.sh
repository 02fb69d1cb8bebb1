#!/bin/sh
# bench/scaling.sh: one server's control plane with many remote slots
# (docs/scaling.md). BenchmarkScaling runs `batchd serve --slots 0` and W
# `batchd worker` processes of S slots on this machine; the workers use the
# TEST-ONLY executor --bench-no-exec (a copy ends at once, no fork), except
# the "fork" case. Each case runs TASKS requested `true` tasks (default
# 20000); the whole list of cases runs COUNT times (default 3), one round
# after the other, so that the cases alternate and the machine's load
# drifts over all of them alike. VARIANTS (default "base") adds ablations
# beside each case: "tmpfs" (the database in memory), "sync-off" (SQLite
# synchronous=OFF, a benchmark-only server flag). CASES is a -bench
# pattern under Scaling/ (default: every case). The summary gives
# min / median / max of tasks/s, the median of the rest, and tasks/s as a
# ratio (of medians) to the first case of the same run, since the
# machine may be shared (the load average is printed around each round,
# and per case as load1). BASELINE (a git revision) builds that revision's
# batchd too and runs every round with both, the baseline first in odd
# rounds and second in even ones: its cases are named "baseline:...".
#
#   bench/scaling.sh                 # about 5 minutes on 2 quiet cores
#   TASKS=5000 COUNT=3 VARIANTS=base,tmpfs,sync-off CASES='.*/noexec/workers=(1|4|64)/' bench/scaling.sh
#   BASELINE=main TASKS=5000 CASES='base/noexec/^workers=(1|4)$/' bench/scaling.sh
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -c -o "$out.test" ./bench/
go build -o "$out.batchd" ./cmd/batchd
trap 'rm -rf "$out" "$out.test" "$out.batchd" "$out.base" "$out.src"' EXIT
bins=$out.batchd
if [ -n "${BASELINE:-}" ]; then
	mkdir "$out.src"
	git archive "$BASELINE" | tar -x -C "$out.src"
	(cd "$out.src" && go build -o "$out.base" ./cmd/batchd)
fi
for round in $(seq "${COUNT:-3}"); do
	echo "round $round: load before $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ -n "${BASELINE:-}" ]; then
		bins="$out.base $out.batchd"
		[ $((round % 2)) = 0 ] && bins="$out.batchd $out.base"
	fi
	for bin in $bins; do
		tag=
		[ "$bin" = "$out.base" ] && tag=baseline:
		(cd bench && BATCHD_BENCH_BIN="$bin" BATCHD_BENCH_VARIANTS="${VARIANTS:-base}" "$out.test" -test.run '^$' -test.bench "Scaling/${CASES:-}" \
			-test.benchtime "${TASKS:-20000}x" -test.count 1 -test.timeout 60m) | sed "s|^BenchmarkScaling/|BenchmarkScaling/$tag|" | tee -a "$out"
	done
	echo "round $round: load after $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
echo "case: tasks/s min / median / max (median's ratio to the first case); medians of write-tx/s, tasks/write-tx, writer-busy, writer-ms/task, server-cpu-ms/task, server-cpus, worker-cpu-ms/task (all workers), client-cpu-ms/task, load1"
awk '$1 ~ /^BenchmarkScaling\// && NF > 3 {
	name = $1; sub(/^BenchmarkScaling\//, "", name); sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i < NF; i += 2) { key = name SUBSEP $(i+1); v[key] = v[key] " " $i }
}
# q: 0 min, 1 median, 2 max
function at(key, q,    m, xs, i, j, t) {
	m = split(substr(v[key], 2), xs, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
	return q == 0 ? xs[1] : q == 2 ? xs[m] : xs[int((m + 1) / 2)]
}
function med(key) { return at(key, 1) }
END {
	base = med(order[1] SUBSEP "tasks/s")
	for (k = 1; k <= n; k++) {
		c = order[k]; r = med(c SUBSEP "tasks/s")
		printf "%-30s %5.0f / %5.0f / %5.0f (%.2f)  %7.1f  %6.1f  %.2f  %.3f  %.3f  %.2f  %.3f  %.3f  %.1f\n", c, at(c SUBSEP "tasks/s", 0), r, at(c SUBSEP "tasks/s", 2), r / base,
			med(c SUBSEP "write-tx/s"), med(c SUBSEP "tasks/write-tx"), med(c SUBSEP "writer-busy"),
			med(c SUBSEP "writer-ms/task"), med(c SUBSEP "server-cpu-ms/task"), med(c SUBSEP "server-cpus"),
			med(c SUBSEP "worker-cpu-ms/task"), med(c SUBSEP "client-cpu-ms/task"), med(c SUBSEP "load1")
	}
}' "$out"
