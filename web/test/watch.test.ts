import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { clientsFor } from "../src/api";
import { Backoff } from "../src/backoff";
import { TaskSetService, WatchTaskSetResponseSchema } from "../src/gen/batch/v1/taskset_pb";
import type { WatchTaskSetResponse } from "../src/gen/batch/v1/taskset_pb";
import { TaskSchema, TaskSetSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import { applyWatch, emptyView } from "../src/state";
import { runWatch, statusText } from "../src/watch";
import type { WatchDeps, WatchStatus } from "../src/watch";

function snapshot(states: TaskState[]): WatchTaskSetResponse {
  return create(WatchTaskSetResponseSchema, {
    snapshot: true,
    taskSet: create(TaskSetSchema, { id: 5n }),
    tasks: states.map((state, index) => create(TaskSchema, { setId: 5n, index, state })),
  });
}
function delta(index: number, state: TaskState): WatchTaskSetResponse {
  return create(WatchTaskSetResponseSchema, { tasks: [create(TaskSchema, { setId: 5n, index, state })] });
}

/** streams is a script: each call to WatchTaskSet plays the next entry; an entry ends in an error, a clean end, or hangs silent until the client gives up. */
type Script = { msgs: WatchTaskSetResponse[]; end: ConnectError | "end" | "hang" }[];

function harness(script: Script, now?: () => number, extra: Partial<WatchDeps> = {}) {
  const seen: bigint[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(TaskSetService, {
      async *watchTaskSet(req, ctx) {
        seen.push(req.setId);
        const step = script.shift();
        if (!step) throw new ConnectError("script over", Code.NotFound);
        for (const m of step.msgs) yield m;
        if (step.end === "hang") {
          await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
        }
        if (step.end !== "end") throw step.end;
      },
    });
  });
  const clients = clientsFor(transport);
  const delays: number[] = [];
  const statuses: WatchStatus[] = [];
  const view = emptyView();
  const deps = {
    open: (id: bigint, signal: AbortSignal) => clients.tasks.watchTaskSet({ setId: id }, { signal }),
    sleep: async (ms: number) => {
      delays.push(ms);
    },
    backoff: new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0 }),
    now,
    ...extra,
  };
  return {
    seen,
    delays,
    statuses,
    get view() {
      return view;
    },
    run: (signal = new AbortController().signal) =>
      runWatch(5n, deps, (m) => void applyWatch(view, m), (s) => statuses.push(s), signal),
  };
}

test("reconnects after a dropped stream, resets backoff after a message, stops on NotFound", async () => {
  const h = harness([
    { msgs: [snapshot([TaskState.DISCLOSED, TaskState.DISCLOSED]), delta(0, TaskState.REQUESTED)], end: new ConnectError("gone", Code.Unavailable) },
    { msgs: [], end: new ConnectError("still gone", Code.Unavailable) },
    { msgs: [], end: new ConnectError("still gone", Code.Unavailable) },
    { msgs: [snapshot([TaskState.FINISHED, TaskState.CANCELED])], end: "end" },
    { msgs: [], end: new ConnectError("no such set", Code.NotFound) },
  ]);
  await h.run();
  assert.deepEqual(h.seen, [5n, 5n, 5n, 5n, 5n]);
  assert.deepEqual(h.delays, [100, 200, 400, 100], "backoff grows while streams fail and resets once one delivers");
  assert.deepEqual(
    h.statuses.map((s) => s.kind),
    ["connecting", "live", "reconnecting", "reconnecting", "reconnecting", "live", "reconnecting", "stopped"],
  );
  const r = h.statuses[2];
  assert.ok(r.kind === "reconnecting");
  assert.equal(r.problem.code, Code.Unavailable);
  assert.equal(r.problem.detail, "gone");
  const ended = h.statuses[6];
  assert.ok(ended.kind === "reconnecting");
  assert.equal(ended.problem.code, undefined, "a clean end of stream reconnects too");
  const last = h.statuses[7];
  assert.ok(last.kind === "stopped");
  assert.equal(last.problem.code, Code.NotFound);
  assert.deepEqual([...h.view.tasks.values()].map((t) => t.state), [TaskState.FINISHED, TaskState.CANCELED], "the reconnect snapshot replaced the old state");
});

test("stops without retrying when sign-in is needed", async () => {
  const h = harness([{ msgs: [], end: new ConnectError("token please", Code.Unauthenticated) }]);
  await h.run();
  assert.deepEqual(h.delays, []);
  const last = h.statuses.at(-1)!;
  assert.ok(last.kind === "stopped");
  assert.ok(last.problem.signIn);
});

test("an abort ends the loop quietly", async () => {
  const ac = new AbortController();
  const h = harness([
    { msgs: [snapshot([TaskState.DISCLOSED])], end: new ConnectError("x", Code.Unavailable) },
  ]);
  const origRun = h.run(ac.signal);
  ac.abort();
  await origRun;
  assert.ok(!h.statuses.some((s) => s.kind === "stopped"), "no error is shown for an abort");
});

test("a stream that comes back says it reconnected and how long it was down; a first connect after failures does not", async () => {
  let clock = 1000;
  const h = harness(
    [
      { msgs: [], end: new ConnectError("not up yet", Code.Unavailable) },
      { msgs: [snapshot([TaskState.DISCLOSED])], end: new ConnectError("dropped", Code.Unavailable) },
      { msgs: [], end: new ConnectError("still gone", Code.Unavailable) },
      { msgs: [snapshot([TaskState.FINISHED])], end: "end" },
      { msgs: [snapshot([TaskState.FINISHED])], end: new ConnectError("no such set", Code.NotFound) },
    ],
    () => (clock += 500),
  );
  await h.run();
  const live = h.statuses.filter((s) => s.kind === "live");
  assert.equal(live.length, 3);
  assert.equal(live[0].reconnectedAfterMs, undefined, "the first live stream is not a reconnect, even after failed tries");
  assert.equal(live[1].reconnectedAfterMs, 500, "down from the drop until the next stream delivered");
  assert.equal(live[2].reconnectedAfterMs, 500, "a clean end of stream that comes back is a reconnect too");
  assert.equal(statusText(live[1]).text, "Live: reconnected by itself after 0.50 s");
});

test("statusText says what happened and when the next try is", () => {
  assert.deepEqual(statusText({ kind: "live" }), { text: "Live", cls: "live" });
  assert.deepEqual(statusText({ kind: "live", reconnectedAfterMs: 2500 }), { text: "Live: reconnected by itself after 2.50 s", cls: "live" });
  const problem = { code: Code.Unavailable, title: "t", detail: "connection refused", hint: "", retryable: true, signIn: false };
  assert.deepEqual(statusText({ kind: "reconnecting", delayMs: 1500, attempt: 3, problem }), {
    text: "Connection lost (connection refused); reconnecting in 1.5 s, attempt 3",
    cls: "reconnecting",
  });
  assert.equal(statusText({ kind: "stopped", problem: { ...problem, title: "Watching the task set: it was not found." } }).text, "Stopped: Watching the task set: it was not found.");
});

test("a stream that goes silent (no change, no keepalive) is taken for dead and opened again", async () => {
  // The watchdog of the first stream fires right after its first message;
  // later streams' watchdogs never fire.
  let streams = 0;
  const idle: number[] = [];
  const h = harness(
    [
      { msgs: [snapshot([TaskState.DISCLOSED])], end: "hang" },
      { msgs: [snapshot([TaskState.REQUESTED])], end: "end" },
      { msgs: [], end: new ConnectError("no such set", Code.NotFound) },
    ],
    undefined,
    {
      idleMs: 45_000,
      watchdog: (ms, onSilent) => {
        idle.push(ms);
        const mine = ++streams;
        return {
          reset: () => {
            if (mine === 1) setTimeout(onSilent, 0);
          },
          stop: () => {},
        };
      },
    },
  );
  await h.run();
  assert.deepEqual(h.seen, [5n, 5n, 5n], "the silent stream was opened again");
  assert.deepEqual(idle, [45_000, 45_000, 45_000]);
  assert.deepEqual(
    h.statuses.map((s) => s.kind),
    ["connecting", "live", "reconnecting", "live", "reconnecting", "stopped"],
  );
  const lost = h.statuses[2];
  assert.ok(lost.kind === "reconnecting" && /went silent/.test(lost.problem.title) && /keepalive/.test(lost.problem.detail));
  assert.match(statusText(lost).text, /nothing heard for/);
  const back = h.statuses[3];
  assert.ok(back.kind === "live" && back.reconnectedAfterMs !== undefined, "the page says it reconnected");
  assert.equal(h.view.tasks.get(0)?.state, TaskState.REQUESTED, "the view is the new stream's snapshot");
});
