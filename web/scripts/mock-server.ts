// A stand-in for `batchd serve`, for working on the page without the Go
// server: it serves dist/ and fakes TaskSetService, BillingService and
// ClusterService in memory with two slots. Not a test oracle: the real
// server is what the e2e test drives.
//
//   npm run mock                      # http://127.0.0.1:8090
//   MOCK_PORT=9000 MOCK_TOKEN=s3 npm run mock   # require a token
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { readFile } from "node:fs/promises";
import http from "node:http";
import { extname, join } from "node:path";
import { BillingService, BillLineSchema, BillTotalsSchema } from "../src/gen/batch/v1/billing_pb";
import type { BillLine } from "../src/gen/batch/v1/billing_pb";
import { ClusterService, MetricsSchema, QueueLengthsSchema, WorkerSchema } from "../src/gen/batch/v1/cluster_pb";
import { TaskSetService, WatchTaskSetResponseSchema } from "../src/gen/batch/v1/taskset_pb";
import type { WatchTaskSetResponse } from "../src/gen/batch/v1/taskset_pb";
import { CopySchema, CopyState, FreeWorkSchema, TaskCountsSchema, TaskSchema, TaskSetSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import type { Copy, Task, TaskSet } from "../src/gen/batch/v1/types_pb";

declare const process: { env: Record<string, string | undefined>; argv: string[] };

const port = Number(process.env.MOCK_PORT || 8090);
const token = process.env.MOCK_TOKEN || "";
const slots = 2;
const owner = "you";
const started = Date.now();

interface Run { copy: Copy; task: Task; duration: number; t0: number }
const sets = new Map<bigint, { set: TaskSet; tasks: Task[] }>();
const watchers = new Map<bigint, Set<(m: WatchTaskSetResponse) => void>>();
const outputs = new Map<string, string>();
const bill: BillLine[] = [];
let running: Run[] = [];
let nextSet = 1n;
let nextCopy = 1n;
let lostRace = 0;
let canceled = 0;

const now = () => Date.now();
const ts = (ms: number) => timestampFromMs(ms);
const key = (t: Task) => `${t.setId}/${t.index}`;

function counts(tasks: Task[]) {
  const c = create(TaskCountsSchema, { total: BigInt(tasks.length) });
  for (const t of tasks) {
    if (t.state === TaskState.DISCLOSED) c.disclosed++;
    if (t.state === TaskState.EXECUTED) c.executed++;
    if (t.state === TaskState.REQUESTED) c.requested++;
    if (t.state === TaskState.FINISHED) c.finished++;
    if (t.state === TaskState.CANCELED) c.canceled++;
    if (t.copies.some((x) => x.state === CopyState.RUNNING)) c.running++;
  }
  return c;
}
function summary(id: bigint): TaskSet {
  const s = sets.get(id)!;
  s.set.counts = counts(s.tasks);
  const fin = s.tasks.filter((t) => t.state === TaskState.FINISHED);
  s.set.meanVisibleResponseSeconds = fin.length ? fin.reduce((a, t) => a + t.visibleResponseSeconds, 0) / fin.length : 0;
  s.set.billedSlotSeconds = bill.filter((b) => b.setId === id).reduce((a, b) => a + b.slotSeconds, 0);
  return s.set;
}
function publish(id: bigint, tasks: Task[]) {
  const m = create(WatchTaskSetResponseSchema, { taskSet: summary(id), tasks });
  for (const w of watchers.get(id) ?? []) w(m);
}
function charge(t: Task, reason: string) {
  const s = sets.get(t.setId)!;
  bill.push(create(BillLineSchema, {
    id: BigInt(bill.length + 1), owner, setId: t.setId, index: t.index, copyId: t.copies.at(-1)?.id ?? 0n,
    slotSeconds: t.serviceSeconds, cpuSeconds: t.serviceSeconds * 0.9, billedAt: ts(now()), reason, setName: s.set.name,
  }));
}
function durationOf(t: Task): number {
  const m = /sleep\s+(\d+(?:\.\d+)?)/.exec(t.spec?.argv.join(" ") ?? "");
  return m ? Number(m[1]) : 1.5;
}
function startCopy(t: Task, speculative: boolean, slot: number) {
  const c = create(CopySchema, { id: nextCopy++, worker: "local-mock", slot, speculative, state: CopyState.RUNNING, startedAt: ts(now()), progress: 0 });
  t.copies.push(c);
  running.push({ copy: c, task: t, duration: durationOf(t) * (speculative ? 0.8 : 1), t0: now() });
}
function tick() {
  const changed = new Map<bigint, Set<Task>>();
  const mark = (t: Task) => (changed.get(t.setId) ?? changed.set(t.setId, new Set()).get(t.setId)!).add(t);
  for (const r of [...running]) {
    const el = (now() - r.t0) / 1000;
    r.copy.progress = Math.min(1, el / r.duration);
    r.task.progress = Math.max(...r.task.copies.filter((c) => c.state === CopyState.RUNNING).map((c) => c.progress), -1);
    mark(r.task);
    if (el < r.duration) continue;
    const t = r.task;
    r.copy.state = CopyState.WON;
    r.copy.endedAt = ts(now());
    for (const o of running.filter((o) => o.task === t && o !== r)) {
      o.copy.state = CopyState.KILLED;
      o.copy.endedAt = ts(now());
      lostRace += (now() - o.t0) / 1000;
    }
    running = running.filter((o) => o.task !== t);
    t.serviceSeconds = el;
    t.executedAt = ts(now());
    t.progress = -1;
    outputs.set(key(t), `mock output of: ${t.spec?.argv.at(-1)}\n`);
    if (t.state === TaskState.REQUESTED) {
      t.state = TaskState.FINISHED;
      t.finishedAt = ts(now());
      t.visibleResponseSeconds = Math.max(0, (now() - Number(t.requestedAt!.seconds) * 1000) / 1000);
      charge(t, "finished");
    } else t.state = TaskState.EXECUTED;
  }
  const all = [...sets.values()].flatMap((s) => s.tasks);
  const busy = () => new Set(running.map((r) => r.copy.slot));
  const want = [
    ...all.filter((t) => t.state === TaskState.REQUESTED),
    ...all.filter((t) => t.state === TaskState.DISCLOSED),
  ].filter((t) => !running.some((r) => r.task === t));
  for (const t of want) {
    const b = busy();
    if (b.size >= slots) break;
    const slot = [0, 1].find((s) => !b.has(s))!;
    startCopy(t, false, slot);
    mark(t);
  }
  // One speculative copy for a requested straggler when a slot is idle.
  const b = busy();
  if (b.size < slots) {
    const r = running.find((r) => r.task.state === TaskState.REQUESTED && !r.copy.speculative && (now() - r.t0) / 1000 > 3 && r.task.copies.filter((c) => c.state === CopyState.RUNNING).length === 1);
    if (r) {
      startCopy(r.task, true, [0, 1].find((s) => !b.has(s))!);
      mark(r.task);
    }
  }
  for (const [id, ts_] of changed) publish(id, [...ts_]);
}
setInterval(tick, 250);

function needSet(id: bigint) {
  const s = sets.get(id);
  if (!s) throw new ConnectError(`task set ${id} not found`, Code.NotFound);
  return s;
}
function pick(s: { tasks: Task[] }, indexes: number[]) {
  return indexes.map((i) => {
    const t = s.tasks[i];
    if (!t) throw new ConnectError(`task ${i} not found`, Code.NotFound);
    return t;
  });
}
function kill(t: Task) {
  for (const r of running.filter((r) => r.task === t)) {
    r.copy.state = CopyState.KILLED;
    r.copy.endedAt = ts(now());
    canceled += (now() - r.t0) / 1000;
  }
  running = running.filter((r) => r.task !== t);
  t.progress = -1;
}

const router = createConnectRouter();
router.service(TaskSetService, {
  disclose(req) {
    if (req.tasks.length === 0) throw new ConnectError("a task set needs at least one task", Code.InvalidArgument);
    const id = nextSet++;
    const set = create(TaskSetSchema, { id, name: req.name, owner, createdAt: ts(now()) });
    const tasks = req.tasks.map((spec, index) =>
      create(TaskSchema, { setId: id, index, spec, state: req.request ? TaskState.REQUESTED : TaskState.DISCLOSED, disclosedAt: ts(now()), requestedAt: req.request ? ts(now()) : undefined, progress: -1 }),
    );
    sets.set(id, { set, tasks });
    return { taskSet: summary(id), firstIndex: 0, count: tasks.length };
  },
  request(req) {
    const s = needSet(req.setId);
    const ts_ = req.all ? s.tasks : pick(s, req.indexes);
    let requested = 0, finishedAtOnce = 0, unchanged = 0;
    for (const t of ts_) {
      if (t.state === TaskState.CANCELED) {
        if (req.all) continue;
        throw new ConnectError(`task ${t.index} is canceled`, Code.FailedPrecondition);
      }
      if (t.state === TaskState.DISCLOSED) {
        t.state = TaskState.REQUESTED;
        t.requestedAt = ts(now());
        requested++;
      } else if (t.state === TaskState.EXECUTED) {
        t.state = TaskState.FINISHED;
        t.requestedAt = ts(now());
        t.finishedAt = ts(now());
        t.visibleResponseSeconds = 0;
        charge(t, "executed-then-requested");
        finishedAtOnce++;
      } else unchanged++;
    }
    publish(req.setId, ts_);
    return { taskSet: summary(req.setId), requested, finishedAtOnce, unchanged, tasks: req.all ? [] : ts_ };
  },
  cancel(req) {
    const s = needSet(req.setId);
    const ts_ = req.indexes.length ? pick(s, req.indexes) : s.tasks;
    let canceled = 0, stopped = 0, already = 0, unchanged = 0;
    for (const t of ts_) {
      if (t.state === TaskState.CANCELED) already++;
      else if (t.state === TaskState.DISCLOSED || t.state === TaskState.EXECUTED) {
        kill(t);
        t.state = TaskState.CANCELED;
        t.canceledAt = ts(now());
        canceled++;
      } else if (t.state === TaskState.REQUESTED && req.indexes.length) {
        kill(t);
        t.state = TaskState.CANCELED;
        t.canceledAt = ts(now());
        stopped++;
      } else unchanged++;
    }
    publish(req.setId, ts_);
    return { taskSet: summary(req.setId), canceled, stopped, alreadyCanceled: already, unchanged };
  },
  getTaskSet(req) {
    const s = needSet(req.setId);
    return { taskSet: summary(req.setId), tasks: s.tasks };
  },
  listTaskSets() {
    return { taskSets: [...sets.keys()].reverse().map(summary) };
  },
  async *watchTaskSet(req, ctx) {
    const s = needSet(req.setId);
    const queue: WatchTaskSetResponse[] = [];
    let wake: (() => void) | undefined;
    const push = (m: WatchTaskSetResponse) => {
      queue.push(m);
      wake?.();
    };
    const ws = watchers.get(req.setId) ?? watchers.set(req.setId, new Set()).get(req.setId)!;
    ws.add(push);
    try {
      yield create(WatchTaskSetResponseSchema, { taskSet: summary(req.setId), tasks: s.tasks, snapshot: true });
      while (!ctx.signal.aborted) {
        while (queue.length) yield queue.shift()!;
        await new Promise<void>((r) => {
          wake = r;
          ctx.signal.addEventListener("abort", () => r(), { once: true });
        });
      }
    } finally {
      ws.delete(push);
    }
  },
  getOutput(req) {
    const s = needSet(req.setId);
    const [t] = pick(s, [req.index]);
    if (t.state !== TaskState.FINISHED) throw new ConnectError(`task ${req.index} is ${TaskState[t.state].toLowerCase()}: its output is readable once it is requested and finished`, Code.FailedPrecondition);
    const out = new TextEncoder().encode(outputs.get(key(t)) ?? "");
    return { stdout: out, stdoutSize: BigInt(out.length), exitCode: 0, cpuSeconds: t.serviceSeconds * 0.9, slotSeconds: t.serviceSeconds, copyId: t.copies.at(-1)?.id ?? 0n, worker: "local-mock", state: t.state };
  },
});
router.service(BillingService, {
  getBill() {
    const billed = bill.reduce((a, b) => a + b.slotSeconds, 0);
    const all = [...sets.values()].flatMap((s) => s.tasks);
    const executed = all.filter((t) => t.state === TaskState.EXECUTED).reduce((a, t) => a + t.serviceSeconds, 0);
    return {
      lines: bill,
      totals: create(BillTotalsSchema, {
        lines: BigInt(bill.length), billedSlotSeconds: billed, billedCpuSeconds: billed * 0.9,
        freeSlotSeconds: lostRace + canceled + executed,
        free: create(FreeWorkSchema, { executedUnrequestedSlotSeconds: executed, speculativeLostSlotSeconds: lostRace, canceledSlotSeconds: canceled }),
        requestedWorkSlotSeconds: billed, scaledBilledResources: billed > 0 ? 1 : 0,
      }),
    };
  },
});
router.service(ClusterService, {
  getCluster() {
    const all = [...sets.values()].flatMap((s) => s.tasks);
    const idle = (st: TaskState) => all.filter((t) => t.state === st && !running.some((r) => r.task === t)).length;
    return {
      workers: [create(WorkerSchema, { id: "local-mock", name: "local-mock", hostname: "mock", slots, busySlots: running.length, canSuspend: true, state: "up", lastHeartbeat: ts(now()), registeredAt: ts(started) })],
      slots, busySlots: running.length,
      queues: create(QueueLengthsSchema, { requested: BigInt(idle(TaskState.REQUESTED)), disclosed: BigInt(idle(TaskState.DISCLOSED)), runningCopies: BigInt(running.length), speculativeCopies: BigInt(running.filter((r) => r.copy.speculative).length) }),
      metrics: create(MetricsSchema, { finishedTasks: BigInt(all.filter((t) => t.state === TaskState.FINISHED).length), load: 0.5, beta: 1.4, betaSamples: 3n }),
      policy: "srpt×fcfs", speculation: "hopper+grass", preemption: "suspend", startedAt: ts(started), version: "mock",
    };
  },
});

const handlers = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
const types: Record<string, string> = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css" };
const dist = join(process.argv[2] ?? ".", "dist");

http
  .createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
    const h = handlers.get(url.pathname);
    if (h) {
      const header = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") header.set(k, v);
      if (token && header.get("authorization") !== `Bearer ${token}`) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "unauthenticated", message: "sign in with your token" }));
        return;
      }
      const ac = new AbortController();
      res.on("close", () => ac.abort());
      const r = await h({
        httpVersion: req.httpVersion, url: url.toString(), method: req.method ?? "POST", header, signal: ac.signal,
        body: (async function* () {
          for await (const c of req) yield c as Uint8Array;
        })(),
      });
      const out: Record<string, string> = {};
      r.header?.forEach((v, k) => (out[k] = v));
      res.writeHead(r.status, out);
      try {
        if (r.body) for await (const c of r.body) res.write(c);
      } catch {}
      res.end();
      return;
    }
    const file = url.pathname === "/" ? "index.html" : url.pathname.slice(1);
    try {
      const b = await readFile(join(dist, file.replace(/\.\./g, "")));
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(b);
    } catch {
      res.writeHead(404).end("not found");
    }
  })
  .listen(port, "127.0.0.1", () => console.log(`mock batchd on http://127.0.0.1:${port}${token ? " (token required)" : ""}`));
