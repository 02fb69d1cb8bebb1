import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { WatchTaskSetResponseSchema } from "../src/gen/batch/v1/taskset_pb";
import { CopySchema, CopyState, TaskCountsSchema, TaskSchema, TaskSetSchema, TaskSpecSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import type { Copy, TaskSpec } from "../src/gen/batch/v1/types_pb";
import {
  Searcher,
  applyWatch,
  buildOrder,
  emptyView,
  isCancelable,
  isRequestable,
  isRetryable,
  restCount,
  retryCount,
  sortedTasks,
  stateSegments,
  updateOrder,
  visibleResponse,
  windowRange,
} from "../src/state";
import type { Filter, SortKey } from "../src/state";

function task(
  index: number,
  state: TaskState,
  more: { requestedAt?: Timestamp; visibleResponseSeconds?: number; exitCode?: number; timedOut?: boolean; serviceSeconds?: number; copies?: Copy[]; spec?: TaskSpec } = {},
) {
  return create(TaskSchema, { setId: 1n, index, state, progress: -1, ...more });
}
function msg(snapshot: boolean, tasks: ReturnType<typeof task>[], setId = 1n, name = "s") {
  return create(WatchTaskSetResponseSchema, { snapshot, tasks, taskSet: create(TaskSetSchema, { id: setId, name }) });
}

test("a snapshot replaces every task and redraws all", () => {
  const v = emptyView();
  assert.deepEqual(applyWatch(v, msg(true, [task(1, TaskState.DISCLOSED), task(0, TaskState.DISCLOSED)])), { all: true });
  assert.equal(v.snapshots, 1);
  assert.deepEqual(sortedTasks(v).map((t) => t.index), [0, 1]);
  applyWatch(v, msg(true, [task(0, TaskState.FINISHED)]));
  assert.deepEqual(sortedTasks(v).map((t) => [t.index, t.state]), [[0, TaskState.FINISHED]], "the reconnect snapshot is the truth");
  assert.equal(v.snapshots, 2);
});

test("a delta replaces only the tasks it carries, in place", () => {
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.DISCLOSED), task(1, TaskState.DISCLOSED), task(2, TaskState.DISCLOSED)]));
  const tasks = v.tasks;
  assert.deepEqual(applyWatch(v, msg(false, [task(1, TaskState.REQUESTED)], 1n, "renamed")), { all: false, indexes: [1] });
  assert.deepEqual(sortedTasks(v).map((t) => t.state), [TaskState.DISCLOSED, TaskState.REQUESTED, TaskState.DISCLOSED]);
  assert.equal(v.set?.name, "renamed");
  assert.equal(v.tasks, tasks, "a delta does not copy the set's tasks");
});

test("an appended task (a big set's snapshot goes on in chunks) redraws all", () => {
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.DISCLOSED)]));
  assert.deepEqual(applyWatch(v, msg(false, [task(1, TaskState.DISCLOSED)])), { all: true });
  assert.equal(v.tasks.size, 2);
});

test("a delta before any snapshot and a message for another set are ignored", () => {
  const e = emptyView();
  assert.deepEqual(applyWatch(e, msg(false, [task(0, TaskState.FINISHED)])), { all: false, indexes: [] });
  assert.equal(e.tasks.size, 0);
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.DISCLOSED)]));
  assert.deepEqual(applyWatch(v, msg(false, [task(0, TaskState.FINISHED)], 2n)), { all: false, indexes: [] });
  assert.equal(v.tasks.get(0)!.state, TaskState.DISCLOSED);
});

test("a message without a set summary keeps the last one", () => {
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.DISCLOSED)]));
  applyWatch(v, create(WatchTaskSetResponseSchema, { tasks: [task(0, TaskState.REQUESTED)] }));
  assert.equal(v.set?.name, "s");
  assert.equal(v.tasks.get(0)!.state, TaskState.REQUESTED);
});

test("the timestamps the page never shows are not kept", () => {
  const v = emptyView();
  const t = task(0, TaskState.FINISHED, { requestedAt: timestampFromMs(1000) });
  t.disclosedAt = timestampFromMs(1);
  t.finishedAt = timestampFromMs(2);
  applyWatch(v, msg(true, [t]));
  const got = v.tasks.get(0)!;
  assert.equal(got.disclosedAt, undefined);
  assert.equal(got.finishedAt, undefined);
  assert.ok(got.requestedAt, "the request time stays: the visible response ticks from it");
});

test("failed tasks are counted as they come and go", () => {
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.FINISHED, { exitCode: 1 }), task(1, TaskState.FINISHED), task(2, TaskState.REQUESTED)]));
  assert.equal(v.failed, 1);
  applyWatch(v, msg(false, [task(2, TaskState.FINISHED, { timedOut: true })]));
  assert.equal(v.failed, 2);
  applyWatch(v, msg(true, [task(0, TaskState.FINISHED)]));
  assert.equal(v.failed, 0, "a snapshot starts the count again");
});

test("requestable, cancelable and the rest", () => {
  const states = [TaskState.DISCLOSED, TaskState.EXECUTED, TaskState.REQUESTED, TaskState.FINISHED, TaskState.CANCELED];
  assert.deepEqual(states.map((s) => isRequestable(task(0, s))), [true, true, false, false, false]);
  assert.deepEqual(states.map((s) => isCancelable(task(0, s))), [true, true, true, false, false]);
  const v = emptyView();
  applyWatch(v, msg(true, states.map((s, i) => task(i, s))));
  assert.equal(restCount(v), 2, "counted from the tasks without a summary's counts");
  v.set = create(TaskSetSchema, { id: 1n, counts: create(TaskCountsSchema, { disclosed: 300n, executed: 7n }) });
  assert.equal(restCount(v), 307, "counted by the server when it sent counts");
});

test("retryable: failed, timed out or canceled; counted from the failures and the set's canceled tasks", () => {
  const states = [TaskState.DISCLOSED, TaskState.EXECUTED, TaskState.REQUESTED, TaskState.FINISHED, TaskState.CANCELED];
  assert.deepEqual(states.map((s) => isRetryable(task(0, s))), [false, false, false, false, true]);
  assert.equal(isRetryable(task(0, TaskState.FINISHED, { exitCode: 2 })), true, "a non-zero exit");
  assert.equal(isRetryable(task(0, TaskState.FINISHED, { timedOut: true })), true, "a timeout");
  const v = emptyView();
  applyWatch(v, msg(true, [task(0, TaskState.FINISHED, { exitCode: 1 }), task(1, TaskState.FINISHED), task(2, TaskState.CANCELED)]));
  v.set = create(TaskSetSchema, { id: 1n, counts: create(TaskCountsSchema, { finished: 2n, canceled: 1n }) });
  assert.equal(retryCount(v), 2, "one failed and one canceled");
});

test("visible response: final when finished, running clock when requested", () => {
  const fin = task(0, TaskState.FINISHED, { visibleResponseSeconds: 3.5 });
  assert.deepEqual(visibleResponse(fin, 1e9), { seconds: 3.5, final: true });
  const req = task(1, TaskState.REQUESTED, { requestedAt: timestampFromMs(100_000) });
  assert.deepEqual(visibleResponse(req, 112), { seconds: 12, final: false });
  assert.deepEqual(visibleResponse(req, 99), { seconds: 0, final: false }, "a clock behind the server's never goes negative");
  assert.equal(visibleResponse(task(2, TaskState.REQUESTED), 5), undefined);
  assert.equal(visibleResponse(task(3, TaskState.DISCLOSED), 5), undefined);
});

function sh(cmd: string, env: Record<string, string> = {}) {
  return create(TaskSpecSchema, { argv: ["sh", "-c", cmd], env });
}
const running = () => [create(CopySchema, { id: 1n, state: CopyState.RUNNING, progress: -1 })];

function bigView() {
  const v = emptyView();
  applyWatch(
    v,
    msg(true, [
      task(0, TaskState.FINISHED, { serviceSeconds: 3, spec: sh("render --frame 0") }),
      task(1, TaskState.FINISHED, { serviceSeconds: 9, exitCode: 2, spec: sh("render --frame 1") }),
      task(2, TaskState.EXECUTED, { serviceSeconds: 1, spec: sh("render --frame 2") }),
      task(3, TaskState.REQUESTED, { copies: running(), spec: sh("render --frame 3") }),
      task(4, TaskState.DISCLOSED, { spec: sh("render --frame 10") }),
      task(5, TaskState.CANCELED, { spec: sh("render --frame 11", { SEED: "x" }) }),
    ]),
  );
  return v;
}

test("the table's order: filter by state and text, sort by index, state and service time", () => {
  const v = bigView();
  const s = new Searcher();
  const order = (state: Filter["state"], text: string, sort: SortKey) => buildOrder(v, { state, text }, sort, s);
  assert.deepEqual(order("all", "", "index"), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(order("all", "", "index-desc"), [5, 4, 3, 2, 1, 0]);
  assert.deepEqual(order("running", "", "index"), [3]);
  assert.deepEqual(order("failed", "", "index"), [1]);
  assert.deepEqual(order("finished", "", "index"), [0, 1]);
  assert.deepEqual(order("all", "FRAME 1", "index"), [1, 4, 5], "text matches the command, case-insensitively");
  assert.deepEqual(order("all", "#4", "index"), [4], "and the index");
  assert.deepEqual(order("all", "1", "index"), [1], "a number matches the index only, not the 1 inside commands");
  assert.deepEqual(order("all", " 10 ", "index"), [], "no task 10");
  assert.deepEqual(order("all", "frame", "index"), [0, 1, 2, 3, 4, 5], "text matches the command");
  assert.deepEqual(order("all", "seed=x", "index"), [5], "and the environment");
  assert.deepEqual(order("all", "", "state"), [3, 2, 4, 0, 1, 5], "running first, then requested, executed, disclosed, finished, canceled");
  assert.deepEqual(order("all", "", "service-desc"), [1, 0, 2, 3, 4, 5], "longest service first, tasks without one last");
  assert.deepEqual(order("all", "", "service"), [2, 0, 1, 3, 4, 5], "shortest first, tasks without one last");
});

test("updateOrder keeps a filtered order in set order by insertion, and asks for a rebuild when sorted by what changed", () => {
  const v = bigView();
  const s = new Searcher();
  const f: Filter = { state: "finished", text: "" };
  for (const sort of ["index", "index-desc"] as const) {
    const v = bigView();
    const order = buildOrder(v, f, sort, s);
    applyWatch(v, msg(false, [task(3, TaskState.FINISHED, { spec: sh("render --frame 3") }), task(0, TaskState.CANCELED)]));
    assert.equal(updateOrder(order, v, [3, 0], f, sort, s), true);
    assert.deepEqual(order, buildOrder(v, f, sort, s), `the same as a rebuilt order (${sort})`);
  }
  const order = buildOrder(v, f, "state", s);
  assert.equal(updateOrder(order, v, [3], f, "state", s), false);
});

test("windowRange draws the visible rows and a few more, never past the ends", () => {
  assert.deepEqual(windowRange(0, 400, 40, 100_000, 5), { start: 0, end: 16 });
  assert.deepEqual(windowRange(4000, 400, 40, 100_000, 5), { start: 95, end: 116 });
  assert.deepEqual(windowRange(40 * 100_000, 400, 40, 100_000, 5), { start: 99_995, end: 100_000 });
  assert.deepEqual(windowRange(0, 400, 40, 0, 5), { start: 0, end: 0 });
});

test("stateSegments splits the tasks by state for the stacked bar", () => {
  const c = create(TaskCountsSchema, { finished: 1n, requested: 1n, disclosed: 2n, running: 3n, total: 4n });
  assert.deepEqual(
    stateSegments(c).map((g) => [g.key, g.n, g.fraction]),
    [
      ["finished", 1, 0.25],
      ["requested", 1, 0.25],
      ["executed", 0, 0],
      ["disclosed", 2, 0.5],
      ["canceled", 0, 0],
    ],
  );
  assert.deepEqual(stateSegments(undefined).map((g) => g.fraction), [0, 0, 0, 0, 0]);
});
