#!/bin/sh
# bench/clistart.sh: what a user waits for at the command line.
#   - `batchctl --version` (the CLI's own start) against a fork/exec of
#     `date`, alternated, N runs each;
#   - CLI request -> task start: `batchctl disclose -q --request -- date
#     +%s%N` on an idle server with one local slot, from the moment the
#     CLI is exec'd to the clock its task prints at its exec (read back
#     afterwards with `batchctl request SET/0`), N runs.
# Prints min / median / max in ms of each, with the load before and after.
#
#   bench/clistart.sh          # N=30
#   N=100 bench/clistart.sh
set -eu
cd "$(dirname "$0")/.."
n=${N:-30}
tmp=$(mktemp -d)
srv=
cleanup() {
	[ -z "$srv" ] || kill "$srv" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
go build -tags urfave_cli_no_docs -o "$tmp/batchd" ./cmd/batchd
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/batchctl" ./cmd/batchctl
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export BATCH_SERVER=http://127.0.0.1:$port BATCHD_DATA=$tmp/data
"$tmp/batchd" serve --listen 127.0.0.1:"$port" --data "$tmp/data" --slots 1 --log-level warn 2>"$tmp/serve.log" &
srv=$!
i=0
until "$tmp/batchctl" status >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "server did not start"; cat "$tmp/serve.log"; exit 1; }
	sleep 0.1
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$n" "$tmp/batchctl" <<'PY'
import statistics, subprocess, sys, time

n, ctl = int(sys.argv[1]), sys.argv[2]

def run(argv):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1e3

def summary(name, xs):
    print("%-45s min %.2f / median %.2f / max %.2f ms (%d runs)" % (name, min(xs), statistics.median(xs), max(xs), len(xs)))

version, date, start = [], [], []
for i in range(n + 3):  # the first three warm the page cache
    v, d = run([ctl, "--version"]), run(["date"])
    t0 = time.time_ns()
    set_id = subprocess.run([ctl, "disclose", "-q", "--request", "--", "date", "+%s%N"],
                            capture_output=True, text=True, check=True).stdout.strip()
    # Not timed: wait for the task and read the clock it printed.
    out = subprocess.run([ctl, "request", set_id + "/0"], capture_output=True, text=True, check=True).stdout
    clock = [w for w in out.split() if w.isdigit() and len(w) >= 18]
    if not clock:
        sys.exit("no clock in the output: %r" % out)
    s = (int(clock[-1]) - t0) / 1e6
    if i >= 3:
        version.append(v); date.append(d); start.append(s)
summary("batchctl --version", version)
summary("fork/exec of date", date)
summary("CLI request -> task start (idle, 1 slot)", start)
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
