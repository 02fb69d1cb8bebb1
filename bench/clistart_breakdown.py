"""Where a CLI request's way to its task's start goes, hop by hop.

Run by `BREAKDOWN=1 bench/clistart.sh` (it starts the server and passes
its arguments): N runs of `batchctl disclose -q --request -- date +%s%N`
against an idle server with one local slot, under `perf record -a` of a
few tracepoints (no process is stopped: each event costs about a
microsecond), then one line per hop with min / median / max of its time
since the hop before, in ms:

  exec      the CLI's exec (sched_process_exec)
  connect   its connect to the server
  sent      its first write on that socket (the request's first byte)
  stamp     the request's write transaction begins (tasks.requested_at)
  decide    the decision that starts its copy (copies.started_at)
  fork      the server's clone(CLONE_VFORK) for the copy
  exec'd    the child's exec of date (sched_process_exec)
  clock     the clock date prints: the task's first instruction, near
            enough (date reads the clock after its dynamic loading)

and, outside the chain: the server's accept of the connection after
the CLI's connect, the server's answer (its write on the
connection) after the decision, the CLI's exit after the answer, and the
fsyncs the server ran between accept and fork (count and total ms):
the WAL header's sync when a write starts the log over, and any
checkpoint's.

Perf's clock is CLOCK_MONOTONIC (-k mono); the database's stamps and
date's clock are CLOCK_REALTIME: the offset between the two is read
before and after the runs.
"""
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time

n, tmp, ctl = int(sys.argv[1]), sys.argv[2], sys.argv[3]
data = tmp + "/data"
devnull = os.open(os.devnull, os.O_WRONLY)


def offset():
    return time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


events = ",".join([
    "sched:sched_process_exec", "sched:sched_process_exit",
    "syscalls:sys_enter_connect", "syscalls:sys_enter_write",
    "syscalls:sys_exit_accept4", "syscalls:sys_enter_clone",
    "syscalls:sys_enter_fsync", "syscalls:sys_exit_fsync",
    "syscalls:sys_enter_fdatasync", "syscalls:sys_exit_fdatasync",
])
off0 = offset()
perf = subprocess.Popen(["perf", "record", "-q", "-a", "-k", "mono", "-o", tmp + "/perf.data", "-e", events],
                        stdout=devnull, stderr=devnull)
time.sleep(1.0)  # perf's own start
runs = []  # (pid, set id, clock)
for i in range(n + 3):  # the first three warm the page cache
    p = subprocess.Popen([ctl, "disclose", "-q", "--request", "--", "date", "+%s%N"],
                         stdout=subprocess.PIPE, stderr=devnull, text=True)
    set_id = p.stdout.read().strip()
    if p.wait() != 0:
        sys.exit("disclose exited with %d" % p.returncode)
    out = subprocess.run([ctl, "request", set_id + "/0"], capture_output=True, text=True, check=True).stdout
    clock = [w for w in out.split() if w.isdigit() and len(w) >= 18]
    if i >= 3:
        runs.append((p.pid, int(set_id), int(clock[-1])))
    time.sleep(0.2)  # idle: the server's work after the task's end is over
perf.send_signal(2)
perf.wait()
off = (off0 + offset()) // 2

script = subprocess.run(["perf", "script", "-i", tmp + "/perf.data", "--ns", "-F", "comm,pid,tid,time,event,trace"],
                        capture_output=True, text=True).stdout
line_re = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+(\d+)\.(\d+):\s+(\S+):\s*(.*)$")
evs = []  # (realtime ns, comm, pid, tid, event, trace)
for line in script.splitlines():
    m = line_re.match(line)
    if not m:
        continue
    comm, pid, tid, s, frac, ev, trace = m.groups()
    t = int(s) * 10**9 + int(frac.ljust(9, "0")[:9]) + off
    evs.append((t, comm, int(pid), int(tid), ev, trace))
evs.sort()


def field(trace, name):
    m = re.search(name + r":\s*(0x[0-9a-f]+)", trace)
    return int(m.group(1), 16) if m else None


db = sqlite3.connect(data + "/batchd.db")
hops = ["exec", "connect", "sent", "stamp", "decide", "fork", "exec'd", "clock"]
rows = {}
skipped = 0
missing = set()
for pid, set_id, clock in runs:
    stamp, = db.execute("SELECT requested_at FROM tasks WHERE set_id = ? AND idx = 0", (set_id,)).fetchone()
    decide, = db.execute("SELECT MIN(started_at) FROM copies WHERE set_id = ? AND idx = 0", (set_id,)).fetchone()
    at = {"stamp": stamp, "decide": decide, "clock": clock}
    cfd = None
    sfd = None
    server = None
    fsyncs = []
    open_fsync = {}
    for t, comm, epid, tid, ev, trace in evs:
        if "exec" not in at:
            if ev == "sched:sched_process_exec" and epid == pid:
                at["exec"] = t
            continue
        if t > clock + 50 * 10**6:
            break
        if epid == pid:
            if ev == "syscalls:sys_enter_connect" and "connect" not in at:
                at["connect"], cfd = t, field(trace, "fd")
            elif ev == "syscalls:sys_enter_write" and cfd is not None and field(trace, "fd") == cfd and "sent" not in at:
                at["sent"] = t
            elif ev == "sched:sched_process_exit" and "group_dead=true" in trace:
                at["exit"] = t
            continue
        if comm != "batchd" and not (ev == "sched:sched_process_exec" and "date" in trace):
            continue
        if ev == "syscalls:sys_exit_accept4" and "connect" in at and "accept" not in at:
            ret = int(trace, 16) if trace.startswith("0x") else -1
            if 0 <= ret < 1 << 31:
                at["accept"], sfd, server = t, ret, epid
        elif "accept" not in at or epid != server and ev != "sched:sched_process_exec":
            continue
        elif ev == "syscalls:sys_enter_write" and field(trace, "fd") == sfd and "answer" not in at:
            at["answer"] = t
        elif ev == "syscalls:sys_enter_clone" and (field(trace, "clone_flags") or 0) & 0x4000 and "fork" not in at:
            at["fork"] = t
        elif ev == "sched:sched_process_exec" and "fork" in at and "exec'd" not in at:
            at["exec'd"] = t
        elif ev in ("syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync") and "fork" not in at:
            open_fsync[tid] = t
        elif ev in ("syscalls:sys_exit_fsync", "syscalls:sys_exit_fdatasync") and tid in open_fsync:
            fsyncs.append(t - open_fsync.pop(tid))
    if any(h not in at for h in hops + ["accept"]):
        skipped += 1
        missing.update(h for h in hops + ["accept"] if h not in at)
        continue
    for a, b in zip(hops, hops[1:]):
        rows.setdefault(a + " -> " + b, []).append((at[b] - at[a]) / 1e6)
    rows.setdefault("exec -> clock (all)", []).append((at["clock"] - at["exec"]) / 1e6)
    if "accept" in at:
        rows.setdefault("connect -> server's accept", []).append((at["accept"] - at["connect"]) / 1e6)
    if "answer" in at:
        rows.setdefault("decide -> server's answer", []).append((at["answer"] - at["decide"]) / 1e6)
        if "exit" in at:
            rows.setdefault("answer -> CLI's exit", []).append((at["exit"] - at["answer"]) / 1e6)
    rows.setdefault("fsyncs between accept and fork, count", []).append(len(fsyncs))
    rows.setdefault("fsyncs between accept and fork, ms", []).append(sum(fsyncs) / 1e6)

for name, xs in rows.items():
    print("%-44s min %7.3f / median %7.3f / max %7.3f (%d runs)" % (name, min(xs), statistics.median(xs), max(xs), len(xs)))
if skipped:
    print("%d runs left out: not seen: %s" % (skipped, ", ".join(sorted(missing))))
