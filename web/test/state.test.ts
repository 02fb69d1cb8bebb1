import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { WatchTaskSetResponseSchema } from "../src/gen/batch/v1/taskset_pb";
import { TaskSchema, TaskSetSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import { applyWatch, emptyView, isCancelable, isRequestable, restCount, sortedTasks, visibleResponse } from "../src/state";

function task(index: number, state: TaskState, more: { requestedAt?: Timestamp; visibleResponseSeconds?: number } = {}) {
  return create(TaskSchema, { setId: 1n, index, state, progress: -1, ...more });
}
function msg(snapshot: boolean, tasks: ReturnType<typeof task>[], setId = 1n, name = "s") {
  return create(WatchTaskSetResponseSchema, { snapshot, tasks, taskSet: create(TaskSetSchema, { id: setId, name }) });
}

test("a snapshot replaces every task and redraws all", () => {
  let v = emptyView();
  let r = applyWatch(v, msg(true, [task(1, TaskState.DISCLOSED), task(0, TaskState.DISCLOSED)]));
  assert.deepEqual(r.change, { all: true });
  assert.equal(r.view.snapshots, 1);
  assert.deepEqual(sortedTasks(r.view).map((t) => t.index), [0, 1]);
  v = r.view;
  r = applyWatch(v, msg(true, [task(0, TaskState.FINISHED)]));
  assert.deepEqual(sortedTasks(r.view).map((t) => [t.index, t.state]), [[0, TaskState.FINISHED]], "the reconnect snapshot is the truth");
  assert.equal(r.view.snapshots, 2);
});

test("a delta replaces only the tasks it carries and does not touch the old view", () => {
  const v = applyWatch(emptyView(), msg(true, [task(0, TaskState.DISCLOSED), task(1, TaskState.DISCLOSED), task(2, TaskState.DISCLOSED)])).view;
  const r = applyWatch(v, msg(false, [task(1, TaskState.REQUESTED)], 1n, "renamed"));
  assert.deepEqual(r.change, { all: false, indexes: [1] });
  assert.deepEqual(sortedTasks(r.view).map((t) => t.state), [TaskState.DISCLOSED, TaskState.REQUESTED, TaskState.DISCLOSED]);
  assert.equal(r.view.set?.name, "renamed");
  assert.equal(v.tasks.get(1)!.state, TaskState.DISCLOSED, "the previous view is unchanged");
  assert.equal(v.set?.name, "s");
});

test("an appended task redraws all", () => {
  const v = applyWatch(emptyView(), msg(true, [task(0, TaskState.DISCLOSED)])).view;
  const r = applyWatch(v, msg(false, [task(1, TaskState.DISCLOSED)]));
  assert.deepEqual(r.change, { all: true });
  assert.equal(r.view.tasks.size, 2);
});

test("a delta before any snapshot and a message for another set are ignored", () => {
  const r = applyWatch(emptyView(), msg(false, [task(0, TaskState.FINISHED)]));
  assert.equal(r.view.tasks.size, 0);
  assert.deepEqual(r.change, { all: false, indexes: [] });
  const v = applyWatch(emptyView(), msg(true, [task(0, TaskState.DISCLOSED)])).view;
  const o = applyWatch(v, msg(false, [task(0, TaskState.FINISHED)], 2n));
  assert.equal(o.view, v);
});

test("a message without a set summary keeps the last one", () => {
  const v = applyWatch(emptyView(), msg(true, [task(0, TaskState.DISCLOSED)])).view;
  const r = applyWatch(v, create(WatchTaskSetResponseSchema, { tasks: [task(0, TaskState.REQUESTED)] }));
  assert.equal(r.view.set?.name, "s");
  assert.equal(r.view.tasks.get(0)!.state, TaskState.REQUESTED);
});

test("requestable, cancelable and the rest", () => {
  const states = [TaskState.DISCLOSED, TaskState.EXECUTED, TaskState.REQUESTED, TaskState.FINISHED, TaskState.CANCELED];
  assert.deepEqual(states.map((s) => isRequestable(task(0, s))), [true, true, false, false, false]);
  assert.deepEqual(states.map((s) => isCancelable(task(0, s))), [true, true, true, false, false]);
  const v = applyWatch(emptyView(), msg(true, states.map((s, i) => task(i, s)))).view;
  assert.equal(restCount(v), 2);
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
