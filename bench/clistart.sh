#!/bin/sh
# bench/clistart.sh: what a user waits for at the command line.
#   - `batchctl --version` (the CLI's own start), against a fork/exec of
#     `date` and of a Go hello-world (the floor of any Go program: the
#     runtime's own start), alternated, N runs each;
#   - CLI request -> task start: `batchctl disclose -q --request -- date
#     +%s%N` on an idle server with one local slot, from the moment the
#     CLI is exec'd to the clock its task prints at its exec (read back
#     afterwards with `batchctl request SET/0`), N runs;
#   - the floors of the stack batchctl links (bench/clifloor): a Go
#     program with an HTTP client, and one with everything a Connect
#     client of batchd links (connect-go, protobuf, the generated API),
#     each doing nothing but print a line: the least a start of batchctl
#     can cost.
# Prints min / median / max in ms of each: the wall time, and the CPU
# time of the command this script starts (user + system, all threads,
# from wait4; for request -> start, the disclosing batchctl's), which the
# machine's other load inflates less; and its page faults (minor faults,
# from wait4), which the load does not change.
# The load is printed before and after.
#
# BASE=REV also builds batchctl and batchd at git revision REV and runs
# them alternated with this tree's: `--version` of each batchctl, and
# request -> start of each batchctl against its own tree's server (two
# idle servers, one slot each): the baseline measured in the same run.
#
# BREAKDOWN=1 instead times each hop of request -> start (the CLI's exec,
# its connect and first byte, the server's accept, the request's stamp,
# the decision, the fork, the child's exec, its clock) under `perf record`
# of a few tracepoints, N runs: see bench/clistart_breakdown.py. It needs
# perf and root (or perf_event_paranoid -1).
#
#   bench/clistart.sh                 # N=30
#   N=100 BASE=main bench/clistart.sh
#   BREAKDOWN=1 bench/clistart.sh
set -eu
cd "$(dirname "$0")/.."
n=${N:-30}
base=${BASE:-}
tmp=$(mktemp -d)
srv=
srvbase=
cleanup() {
	[ -z "$srv" ] || kill "$srv" 2>/dev/null || true
	[ -z "$srvbase" ] || kill "$srvbase" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
# The flags of `make build`.
go build -tags urfave_cli_no_docs -o "$tmp/batchd" ./cmd/batchd
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/batchctl" ./cmd/batchctl
if [ -n "$base" ]; then
	mkdir "$tmp/base"
	git archive "$base" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/batchctl-base" ./cmd/batchctl)
	(cd "$tmp/base" && go build -tags urfave_cli_no_docs -o "$tmp/batchd-base" ./cmd/batchd)
fi
mkdir "$tmp/hello"
printf 'module hello\n\ngo 1.22\n' >"$tmp/hello/go.mod"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("hello\\n") }\n' >"$tmp/hello/main.go"
(cd "$tmp/hello" && CGO_ENABLED=0 go build -o "$tmp/hello-go" .)
# The floors of batchctl's stack (bench/clifloor): a Go program with an
# HTTP client, and one that links every Connect client's packages.
CGO_ENABLED=0 go build -o "$tmp/floor-nethttp" ./bench/clifloor/nethttp
CGO_ENABLED=0 go build -o "$tmp/floor-connect" ./bench/clifloor/connect
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
portbase=
if [ -n "$base" ]; then
	portbase=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$tmp/batchd-base" serve --listen 127.0.0.1:"$portbase" --data "$tmp/data-base" --slots 1 --log-level warn 2>"$tmp/serve-base.log" &
	srvbase=$!
	i=0
	until BATCH_SERVER=http://127.0.0.1:$portbase BATCHD_DATA=$tmp/data-base "$tmp/batchctl-base" status >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "BASE server did not start"; cat "$tmp/serve-base.log"; exit 1; }
		sleep 0.1
	done
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${BREAKDOWN:-}" ]; then
	python3 bench/clistart_breakdown.py "$n" "$tmp" "$tmp/batchctl"
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi
python3 - "$n" "$tmp" "$base" "$portbase" <<'PY'
import os, statistics, subprocess, sys, time

n, tmp, base, portbase = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
# (name, batchctl, the environment that points it at its own tree's server)
ctls = [("batchctl", tmp + "/batchctl", dict(os.environ))]
if base:
    ctls.append(("batchctl@" + base, tmp + "/batchctl-base",
                 dict(os.environ, BATCH_SERVER="http://127.0.0.1:" + portbase, BATCHD_DATA=tmp + "/data-base")))
devnull = os.open(os.devnull, os.O_WRONLY)

def run(argv):
    """Wall and CPU milliseconds and page faults of one run of argv."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=devnull, stderr=devnull)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1e3
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("%s exited with %d" % (argv, p.returncode))
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_minflt

def start(ctl, env):
    """Milliseconds from the CLI's exec to its task's exec, and the CPU
    milliseconds and page faults of that CLI process."""
    t0 = time.time_ns()
    p = subprocess.Popen([ctl, "disclose", "-q", "--request", "--", "date", "+%s%N"],
                         stdout=subprocess.PIPE, stderr=devnull, text=True, env=env)
    set_id = p.stdout.read().strip()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("disclose exited with %d" % p.returncode)
    cpu = (ru.ru_utime + ru.ru_stime) * 1e3
    # Not timed: wait for the task and read the clock it printed.
    out = subprocess.run([ctl, "request", set_id + "/0"], capture_output=True, text=True, check=True, env=env).stdout
    clock = [w for w in out.split() if w.isdigit() and len(w) >= 18]
    if not clock:
        sys.exit("no clock in the output: %r" % out)
    return (int(clock[-1]) - t0) / 1e6, cpu, ru.ru_minflt

rows = {}
def add(name, v):
    rows.setdefault(name, []).append(v)

for i in range(n + 3):  # the first three warm the page cache
    got = []
    # Each build goes first every other round: the one right after the
    # last round's request shares the machine with the server's work
    # that follows its task's end.
    order = ctls if i % 2 == 0 else ctls[::-1]
    for name, ctl, _ in order:
        got.append((name + " --version", run([ctl, "--version"])))
    got.append(("Go hello-world", run([tmp + "/hello-go"])))
    got.append(("Go + net/http (floor)", run([tmp + "/floor-nethttp"])))
    got.append(("Go + net/http + connect + protobuf + batch/v1 (floor)", run([tmp + "/floor-connect"])))
    got.append(("fork/exec of date", run(["date"])))
    for name, ctl, env in order:
        # Idle: the server's work after the last task's end (its group
        # commit, the checkpoint 100 ms after) is over.
        time.sleep(0.3)
        got.append((name + ": CLI request -> task start (idle, 1 slot)", start(ctl, env)))
    if i >= 3:
        for name, (wall, cpu, faults) in got:
            add((name, "wall"), wall)
            add((name, "cpu"), cpu)
            add((name, "faults"), faults)

def summary(kind, xs):
    if kind == "faults":
        return "min %d / median %d / max %d" % (min(xs), statistics.median(xs), max(xs))
    return "min %.2f / median %.2f / max %.2f ms" % (min(xs), statistics.median(xs), max(xs))

for (name, kind), xs in rows.items():
    print("%-62s %-6s %s (%d runs)" % (name, kind, summary(kind, xs), len(xs)))
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
