import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { AttemptSchema, CopySchema, CopyState, TaskSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import { timeline } from "../src/timeline";

const at = (s: number) => timestampFromMs(s * 1000);

test("timeline: a retried task with a speculative copy that won", () => {
  const t = create(TaskSchema, {
    index: 3,
    attempt: 2,
    state: TaskState.FINISHED,
    exitCode: 0,
    requestedAt: at(200),
    finishedAt: at(230),
    attempts: [create(AttemptSchema, { attempt: 1, state: TaskState.FINISHED, exitCode: 1, requestedAt: at(100), finishedAt: at(150), retriedAt: at(190) })],
    copies: [
      create(CopySchema, { id: 1n, attempt: 1, worker: "w", slot: 0, state: CopyState.WON, startedAt: at(101), endedAt: at(150) }),
      create(CopySchema, { id: 2n, attempt: 2, worker: "w", slot: 0, state: CopyState.KILLED, startedAt: at(201), endedAt: at(230) }),
      create(CopySchema, { id: 3n, attempt: 2, worker: "v", slot: 1, speculative: true, state: CopyState.WON, startedAt: at(210), endedAt: at(230) }),
    ],
  });
  const s = timeline(t, 1000);
  assert.equal(s.length, 2);
  assert.deepEqual(s[0].events.map((e) => e.what), ["requested (queued)", "copy #1 on w/0 started", "copy #1 won", "finished, exit 1"]);
  assert.equal(s[1].current, true);
  assert.deepEqual(
    s[1].events.map((e) => e.what),
    ["requested (queued)", "copy #2 on w/0 started", "speculative copy #3 on v/1 started", "copy #2 killed", "copy #3 won", "finished, exit 0"],
  );
  assert.deepEqual(s[1].bars.map((b) => [b.id, b.speculative, b.won, b.start, b.end]), [[2n, false, false, 201, 230], [3n, true, true, 210, 230]]);
  assert.equal(s[1].from, 200);
  assert.equal(s[1].to, 230);
});

test("timeline: a running copy and a suspended one reach now", () => {
  const t = create(TaskSchema, {
    attempt: 1,
    state: TaskState.REQUESTED,
    requestedAt: at(10),
    copies: [
      create(CopySchema, { id: 7n, attempt: 1, worker: "w", state: CopyState.SUSPENDED, startedAt: at(11), suspendedAt: at(30), suspendedSeconds: 4 }),
      create(CopySchema, { id: 8n, attempt: 1, worker: "w", speculative: true, state: CopyState.RUNNING, startedAt: at(20) }),
    ],
  });
  const [s] = timeline(t, 50);
  assert.deepEqual(s.bars.map((b) => [b.state, b.end, b.open, b.suspendedSeconds]), [["suspended", 50, true, 24], ["running", 50, true, 0]]);
  assert.equal(s.to, 50);
  assert.deepEqual(s.events.map((e) => e.what), ["requested (queued)", "copy #7 on w/0 started", "speculative copy #8 on w/0 started", "copy #7 suspended"]);
});
