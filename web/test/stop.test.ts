import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { stopText } from "../src/stop";
import { StopFiredSchema, StopRuleSchema, TaskCountsSchema, TaskSetSchema } from "../src/gen/batch/v1/types_pb";

test("a set without a rule or holds says nothing", () => {
  assert.equal(stopText(create(TaskSetSchema, { id: 1n })), "");
});

test("the rule, the task that fired it and the held tasks", () => {
  const ts = create(TaskSetSchema, {
    id: 3n,
    stop: create(StopRuleSchema, { onSuccess: true, onExit: [3, 4], onOutput: "^found", after: 2 }),
    stopped: create(StopFiredSchema, { index: 17, why: "output matched", canceled: 982n, at: timestampFromMs(Date.UTC(2026, 0, 2, 3, 4, 5)) }),
    counts: create(TaskCountsSchema, { held: 2n }),
  });
  assert.equal(
    stopText(ts),
    "Stop rule: on success, on exit 3,4, on output /^found/, after 2 successes · fired by task 17 (output matched) at 2026-01-02 03:04:05, canceled 982 tasks · 2 tasks held",
  );
});
