#!/bin/sh
# bench/bigdisclose.sh: big discloses beside a worker's lease. One server
# with no local slots and a short lease (LEASE, default 3s), one remote
# worker of 4 slots bound to the admin, who requests SHORT `sleep 0.05`
# tasks (default 200) while another user discloses DISCLOSES sets of TASKS
# `true` tasks at once (default 8 of 200,000), which queue (the worker
# does not run that user's tasks). It prints how long the short tasks
# took, the lease lapses, the heartbeats answered without the server's
# lock and the heartbeats' p99 (the bucket of batchd_heartbeat_seconds
# that holds the 99th percentile: the server's time to answer, from its
# handler's start), the heartbeats deferred (answered before their
# writes) and coalesced (a newer one of the same worker written instead)
# and each phase's p99 (lock, writer, write and its begin, statements
# and commit, apply:
# batchd_heartbeat_phase_seconds), how long heartbeats held the server's
# lock (batchd_heartbeat_lock_held_seconds) and the reports' answers'
# p99 (batchd_report_seconds), from /metrics (each absent from older
# builds), and the load before and after. A probe worker that does
# nothing but heartbeat (curl, every PROBE s, default 0.5) times the
# answers from outside the server: the HTTP server and Go runtime before
# the handler included.
#
#   bench/bigdisclose.sh
#   DISCLOSES=4 TASKS=50000 bench/bigdisclose.sh
#   BATCHD=/path/to/old/batchd bench/bigdisclose.sh   # another build's server and worker
set -eu
cd "$(dirname "$0")/.."
n=${DISCLOSES:-8}
tasks=${TASKS:-200000}
lease=${LEASE:-3s}
short=${SHORT:-200}
tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
if [ -n "${BATCHD:-}" ]; then cp "$BATCHD" "$tmp/batchd"; else go build -o "$tmp/batchd" ./cmd/batchd; fi
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/batchctl" ./cmd/batchctl
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
export BATCH_SERVER=$url BATCHD_DATA=$tmp/data
"$tmp/batchd" serve --listen 127.0.0.1:"$port" --data "$tmp/data" --slots 0 --lease "$lease" \
	--rate -1 --max-open-sets -1 --max-queued-tasks -1 --log-level warn 2>"$tmp/serve.log" &
pids="$!"
i=0
until "$tmp/batchctl" status >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "server did not start"; cat "$tmp/serve.log"; exit 1; }
	sleep 0.1
done
wtoken=$("$tmp/batchd" user add --data "$tmp/data" --worker w)
btoken=$("$tmp/batchctl" users add bulk 2>/dev/null)
[ -n "$btoken" ] || { echo "no token for user bulk"; exit 1; }
BATCH_WORKER_TOKEN=$wtoken "$tmp/batchd" worker --server "$url" --name w1 --slots 4 --isolation none --user admin \
	--state-dir "$tmp/w1" 2>"$tmp/worker.log" &
pids="$pids $!"
until "$tmp/batchctl" cluster 2>/dev/null | grep -q w1; do sleep 0.1; done
# A probe: a second worker, bound to a user with no tasks, that curl
# registers and then heartbeats every PROBE seconds (default 0.5), timing
# each answer from outside the server (its HTTP and runtime included).
rpc() {
	m=$1 body=$2
	shift 2
	curl -s -H "Authorization: Bearer $wtoken" -H 'Content-Type: application/json' -d "$body" "$@" "$url/batch.v1.WorkerService/$m"
}
rpc Register '{"name":"probe","slots":1,"isolation":"none","boundUser":"nobody"}' | grep -q '"workerId"' ||
	{ echo "the probe did not register"; exit 1; }
probe() {
	while :; do
		rpc Heartbeat '{"workerId":"probe"}' -o /dev/null -w '%{http_code} %{time_total}\n' >>"$tmp/probe.txt" || true
		sleep "${PROBE:-0.5}"
	done
}
seq "$tasks" | sed 's/.*/true/' >"$tmp/big.txt"
seq "$short" | sed 's/.*/sleep 0.05/' >"$tmp/short.txt"
metric() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }'; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
probe &
prober=$!
pids="$pids $prober"
k=0
bulk=
while [ $k -lt "$n" ]; do
	"$tmp/batchctl" --token "$btoken" disclose -q --file "$tmp/big.txt" >/dev/null &
	bulk="$bulk $!"
	k=$((k + 1))
done
t0=$(date +%s.%N)
set_id=$("$tmp/batchctl" disclose --request -q --file "$tmp/short.txt")
"$tmp/batchctl" request -q "$set_id" >/dev/null || true
t1=$(date +%s.%N)
# The discloses, not the server or worker. (`jobs -p` in a command
# substitution runs in a subshell, which has no jobs: it waited for none.)
failed=0
for j in $bulk; do wait "$j" || failed=$((failed + 1)); done
t2=$(date +%s.%N)
kill "$prober"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$short short tasks on 4 slots: $(echo "$t1 - $t0" | bc) s; $n discloses of $tasks tasks done after $(echo "$t2 - $t0" | bc) s"
[ "$failed" -eq 0 ] || echo "$failed of the $n discloses failed"
echo "lease lapses: $(metric batchd_lease_lapses_total); heartbeats answered without the lock: $(metric batchd_heartbeats_unlocked_total)"
curl -s "$url/metrics" | awk '
	/^batchd_heartbeat_seconds_bucket/ { match($0, /le="[^"]*"/); le[++k] = substr($0, RSTART + 4, RLENGTH - 5); c[k] = $2 }
	/^batchd_heartbeat_seconds_count/ { n = $2 }
	END {
		if (n == 0) { print "no heartbeats timed"; exit }
		for (i = 1; i <= k; i++) if (c[i] >= 0.99 * n) { p = le[i]; break }
		for (i = 1; i <= k; i++) if (c[i] >= n) { m = le[i]; break }
		printf "heartbeats answered: %d; p99 <= %s s, all <= %s s (batchd_heartbeat_seconds buckets)\n", n, p, m
	}'
echo "heartbeats deferred (answered before their writes): $(metric batchd_heartbeats_deferred_total); coalesced (never written, a newer one written instead): $(metric batchd_heartbeats_coalesced_total)"
curl -s "$url/metrics" | awk '
	/^batchd_heartbeat_phase_seconds_bucket/ {
		match($0, /phase="[^"]*"/); ph = substr($0, RSTART + 7, RLENGTH - 8)
		match($0, /le="[^"]*"/); k[ph]++; le[ph, k[ph]] = substr($0, RSTART + 4, RLENGTH - 5); c[ph, k[ph]] = $2
	}
	/^batchd_heartbeat_phase_seconds_count/ { match($0, /phase="[^"]*"/); n[substr($0, RSTART + 7, RLENGTH - 8)] = $2 }
	END {
		no = split("lock writer write begin statements commit apply", order, " ")
		for (o = 1; o <= no; o++) {
			ph = order[o]
			if (!(ph in n) || n[ph] == 0) continue
			p = ""; m = ""
			for (i = 1; i <= k[ph]; i++) if (p == "" && c[ph, i] >= 0.99 * n[ph]) p = le[ph, i]
			for (i = 1; i <= k[ph]; i++) if (m == "" && c[ph, i] >= n[ph]) m = le[ph, i]
			printf "  phase %s: %d, p99 <= %s s, all <= %s s\n", ph, n[ph], p, m
		}
	}'
# hist NAME: a histogram's count, the bucket holding its p99, the bucket
# holding its slowest and its sum (absent from older builds).
hist() {
	curl -s "$url/metrics" | awk -v name="$1" '
		index($0, name "_bucket{") == 1 { match($0, /le="[^"]*"/); le[++k] = substr($0, RSTART + 4, RLENGTH - 5); c[k] = $2 }
		index($0, name "_count ") == 1 { n = $2 }
		index($0, name "_sum ") == 1 { sum = $2 }
		END {
			if (n == 0) { print "  " name ": none"; exit }
			for (i = 1; i <= k; i++) if (p == "" && c[i] >= 0.99 * n) p = le[i]
			for (i = 1; i <= k; i++) if (m == "" && c[i] >= n) m = le[i]
			printf "  %s: %d, p99 <= %s s, all <= %s s, sum %.3f s\n", name, n, p, m, sum
		}'
}
awk '$1 != 200 { bad++ } $1 == 200 { print $2 }
	END { if (bad) printf "%d probe heartbeats not answered 200\n", bad > "/dev/stderr" }' "$tmp/probe.txt" | sort -n | awk '
	{ v[NR] = $1 }
	END {
		if (NR == 0) { print "no probe heartbeats"; exit }
		i = int(0.99 * NR); if (i < 0.99 * NR) i++
		printf "probe heartbeats (curl, from outside the server): %d, median %.1f ms, p99 %.1f ms, max %.1f ms\n", NR, 1000 * v[int((NR + 1) / 2)], 1000 * v[i], 1000 * v[NR]
	}'
echo "the heartbeats' hold of the server's lock, and the reports' answers:"
hist batchd_heartbeat_lock_held_seconds
hist batchd_report_seconds
grep -c "lease lapsed" "$tmp/serve.log" | sed 's/^/"worker lease lapsed" lines in the server log: /'
grep -c "copy not reported by its worker" "$tmp/serve.log" | sed 's/^/copies lost as not reported by their worker: /'
echo "WAL truncations: $(metric batchd_store_wal_truncations_total) (given up on readers: $(metric batchd_store_wal_truncations_busy_total))"
