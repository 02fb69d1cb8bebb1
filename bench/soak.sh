#!/bin/sh
# bench/soak.sh: one server under sustained load for DURATION, sampled
# every INTERVAL into a CSV: the server's RSS (anonymous and mapped),
# threads and open descriptors, the memory SQLite allocated, the WAL file
# and the database file, the server's CPU time and the reader's last
# `batchctl bill` call, against the tasks finished so far. A reader
# lists the sets and reads the bill every 0.2 s, so that read snapshots
# overlap checkpoints. The tasks are sets of TASKS `true` tasks, requested,
# on SLOTS local slots:
#   - by default WRITERS closed loops, each disclosing its next set when
#     its last one ended: the full rate, which follows the machine's load;
#   - with RATE=N, one set every TASKS/N seconds on a fixed schedule (open
#     loop): N tasks a second whatever the load, as long as N is below
#     what the server can do at that load (the rate per third shows it).
#
#   bench/soak.sh                          # 30 minutes, closed loops
#   RATE=100 bench/soak.sh                 # 30 minutes at 100 tasks/s
#   DURATION=5m CSV=/tmp/soak.csv bench/soak.sh   # default CSV: $TMPDIR/batchd-soak.csv
#   BATCHD=/path/to/batchd bench/soak.sh   # a server built elsewhere
#
# At the end it prints the WAL file's maximum, and the mean RSS, threads,
# descriptors and the task rate of the first, middle and last third of
# the run. Flat means the last third within 10% of the middle one: the
# first third is the warm-up, in which the server's thread count climbs
# to the most its blocking calls ever needed at once (Go keeps an OS
# thread once it made one), its heap grows to its working size, and the
# store's 64 MB mapping of the database fills as the database grows.
# Those rises are bounded by design; a leak is what keeps rising after
# them. RSS and threads follow the rate, so a closed-loop run on a loaded
# machine is flat only if its rate was: judge it with RATE, or only where
# the rate per third is within 10% too.
set -eu
cd "$(dirname "$0")/.."
dur=${DURATION:-30m}
interval=${INTERVAL:-5}
slots=${SLOTS:-4}
tasks=${TASKS:-200}
writers=${WRITERS:-2}
rate=${RATE:-}
tmp=$(mktemp -d)
csv=${CSV:-${TMPDIR:-/tmp}/batchd-soak.csv}
case $dur in
*h) secs=$((${dur%h} * 3600)) ;;
*m) secs=$((${dur%m} * 60)) ;;
*s) secs=${dur%s} ;;
*) secs=$dur ;;
esac
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
if [ -n "${BATCHD:-}" ]; then # a server built elsewhere (another revision)
	cp "$BATCHD" "$tmp/batchd"
else
	go build -o "$tmp/batchd" ./cmd/batchd
fi
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/batchctl" ./cmd/batchctl
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export BATCH_SERVER=http://127.0.0.1:$port BATCHD_DATA=$tmp/data
"$tmp/batchd" serve --listen 127.0.0.1:"$port" --data "$tmp/data" --slots "$slots" \
	--rate -1 --max-open-sets -1 --max-queued-tasks -1 --log-level warn 2>"$tmp/serve.log" &
srv=$!
pids="$srv"
i=0
until "$tmp/batchctl" status >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "server did not start"; cat "$tmp/serve.log"; exit 1; }
	sleep 0.1
done
seq "$tasks" | sed 's/.*/true/' >"$tmp/tasks.txt"
if [ -n "$rate" ]; then
	# Open loop: one set of TASKS every TASKS/RATE seconds, on a fixed
	# schedule (a late disclose does not push the next ones back), so the
	# offered rate holds whatever the machine's load; below the server's
	# capacity, the tasks finish at that rate too.
	(gap=$(awk -v t="$tasks" -v r="$rate" 'BEGIN { print t / r }')
	next=$(date +%s.%N)
	while :; do
		"$tmp/batchctl" disclose --request -q --file "$tmp/tasks.txt" >/dev/null 2>&1 &
		next=$(awk -v n="$next" -v g="$gap" 'BEGIN { printf "%.3f", n + g }')
		wait_s=$(awk -v n="$next" -v t="$(date +%s.%N)" 'BEGIN { d = n - t; printf "%.3f", (d > 0 ? d : 0) }')
		sleep "$wait_s"
	done) &
	pids="$pids $!"
else
	w=0
	while [ $w -lt "$writers" ]; do
		(while :; do
			set_id=$("$tmp/batchctl" disclose --request -q --file "$tmp/tasks.txt") || { sleep 1; continue; }
			"$tmp/batchctl" request -q "$set_id" >/dev/null 2>&1 || true
		done) &
		pids="$pids $!"
		w=$((w + 1))
	done
fi
(while :; do
	"$tmp/batchctl" status >/dev/null 2>&1 || true
	b0=$(date +%s%N)
	"$tmp/batchctl" bill >/dev/null 2>&1 || true
	echo $((($(date +%s%N) - b0) / 1000000)) >"$tmp/bill_ms"
	sleep 0.2
done) &
pids="$pids $!"

metric() { # name: its value in /metrics (0 when absent)
	curl -s "$BATCH_SERVER/metrics" | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }'
}
echo "seconds,tasks,rss_kb,threads,fds,wal_file_bytes,db_file_bytes,wal_pages,load1,rss_anon_kb,rss_file_kb,sqlite_bytes,bill_ms,server_cpu_s" >"$csv"
tck=$(getconf CLK_TCK)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
while :; do
	now=$(date +%s)
	el=$((now - start))
	rss=$(awk '/^VmRSS:/ { print $2 }' /proc/$srv/status)
	# RSS splits into the heap (anonymous) and the database pages the
	# store maps (file; at most its 64 MB mapping): the second grows with
	# the database until the mapping is full, and is no leak.
	anon=$(awk '/^RssAnon:/ { print $2 }' /proc/$srv/status)
	file=$(awk '/^RssFile:/ { print $2 }' /proc/$srv/status)
	thr=$(awk '/^Threads:/ { print $2 }' /proc/$srv/status)
	fds=$(ls /proc/$srv/fd | wc -l)
	wal=$(stat -c %s "$tmp/data/batchd.db-wal" 2>/dev/null || echo 0)
	dbb=$(stat -c %s "$tmp/data/batchd.db")
	done_=$(metric batchd_copies_ended_total)
	pages=$(metric batchd_store_wal_pages)
	sqlm=$(metric batchd_store_sqlite_memory_bytes) # 0 from a server without it
	billms=$(cat "$tmp/bill_ms" 2>/dev/null || echo 0) # the reader's last `batchctl bill`, wall ms
	cpu=$(awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' /proc/$srv/stat) # the server's user + system CPU so far
	echo "$el,$done_,$rss,$thr,$fds,$wal,$dbb,$pages,$(cut -d' ' -f1 /proc/loadavg),$anon,$file,$sqlm,${billms:-0},$cpu" >>"$csv"
	[ "$el" -lt "$secs" ] || break
	sleep "$interval"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F, 'function tmax(m,  i) { for (i = 1; i <= n; i++) if (th[i] == m) return t[i] }
NR > 1 { n++; t[n] = $1; k[n] = $2; r[n] = $3; th[n] = $4; f[n] = $5; w[n] = $6; d[n] = $7; an[n] = $10; fi[n] = $11; ld[n] = $9; sq[n] = $12; bm[n] = $13; cp[n] = $14 }
END {
	maxw = 0; for (i = 1; i <= n; i++) if (w[i] > maxw) maxw = w[i]
	a = int(n / 3); if (a < 1) a = 1
	for (i = 1; i <= a; i++) { r0 += r[i]; t0 += th[i]; f0 += f[i]; a0 += an[i]; m0 += fi[i]; s0 += sq[i] }
	for (i = a + 1; i <= 2 * a; i++) { r1 += r[i]; t1 += th[i]; f1 += f[i]; a1 += an[i]; m1 += fi[i]; s1 += sq[i] }
	for (i = n - a + 1; i <= n; i++) { r2 += r[i]; t2 += th[i]; f2 += f[i]; a2 += an[i]; m2 += fi[i]; s2 += sq[i] }
	for (i = 1; i <= n; i++) { l += ld[i]; if (ld[i] > lmax) lmax = ld[i] }
	printf "%d s, %d tasks (%.0f/s), database %.1f MB at the end (%.0f bytes per task)\n", t[n], k[n], k[n] / (t[n] > 0 ? t[n] : 1), d[n] / 1e6, d[n] / (k[n] > 0 ? k[n] : 1)
	printf "WAL file: max %.1f MB, last %.1f MB\n", maxw / 1e6, w[n] / 1e6
	printf "first (warm-up) / middle / last third: RSS %.0f / %.0f / %.0f MB, threads %.1f / %.1f / %.1f, fds %.1f / %.1f / %.1f\n", r0 / a / 1024, r1 / a / 1024, r2 / a / 1024, t0 / a, t1 / a, t2 / a, f0 / a, f1 / a, f2 / a
	printf "first (warm-up) / middle / last third: RSS of the heap (anonymous) %.0f / %.0f / %.0f MB, of mapped database pages %.0f / %.0f / %.0f MB\n", a0 / a / 1024, a1 / a / 1024, a2 / a / 1024, m0 / a / 1024, m1 / a / 1024, m2 / a / 1024
	printf "first (warm-up) / middle / last third: memory SQLite allocated %.1f / %.1f / %.1f MB\n", s0 / a / 1e6, s1 / a / 1e6, s2 / a / 1e6
	# tasks per second in each third, from the samples at its ends
	q0 = (k[a] - k[1]) / (t[a] - t[1] > 0 ? t[a] - t[1] : 1)
	q1 = (k[2 * a] - k[a]) / (t[2 * a] - t[a] > 0 ? t[2 * a] - t[a] : 1)
	q2 = (k[n] - k[n - a]) / (t[n] - t[n - a] > 0 ? t[n] - t[n - a] : 1)
	printf "first (warm-up) / middle / last third: %.0f / %.0f / %.0f tasks/s\n", q0, q1, q2
	# the CPU the server spent per task finished, and the bill call of the reader, per third
	c0 = (k[a] > k[1] ? (cp[a] - cp[1]) / (k[a] - k[1]) : 0)
	c1 = (k[2 * a] > k[a] ? (cp[2 * a] - cp[a]) / (k[2 * a] - k[a]) : 0)
	c2 = (k[n] > k[n - a] ? (cp[n] - cp[n - a]) / (k[n] - k[n - a]) : 0)
	for (i = 1; i <= a; i++) b0 += bm[i]
	for (i = a + 1; i <= 2 * a; i++) b1 += bm[i]
	for (i = n - a + 1; i <= n; i++) b2 += bm[i]
	printf "first (warm-up) / middle / last third: server CPU %.3f / %.3f / %.3f ms per task; the reader: batchctl bill %.0f / %.0f / %.0f ms (wall, mean)\n", c0 * 1000, c1 * 1000, c2 * 1000, b0 / a, b1 / a, b2 / a
	printf "last / middle third (flat: within 10%%): RSS %.2f, heap RSS %.2f, threads %.2f, fds %.2f, rate %.2f\n", r2 / r1, (a1 > 0 ? a2 / a1 : 0), t2 / t1, f2 / f1, (q1 > 0 ? q2 / q1 : 0)
	maxt = 0; for (i = 1; i <= n; i++) if (th[i] > maxt) maxt = th[i]
	printf "threads: max %d; the time it was first reached: %d s\n", maxt, tmax(maxt)
	printf "load average during the run: mean %.1f, max %.1f\n", l / n, lmax
}' "$csv"
echo "CSV: $csv"
