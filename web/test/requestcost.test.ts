import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { TaskSchema, TaskSpecSchema, TaskState } from "../src/gen/batch/v1/types_pb";
import { requestBill, requestCostText } from "../src/requestcost";

const task = (state: TaskState, estimate: number, service = 0) => create(TaskSchema, { state, serviceSeconds: service, spec: create(TaskSpecSchema, { argv: ["true"], estimateSeconds: estimate }) });

test("requestBill counts the unrequested tasks and what their estimates imply", () => {
  const b = requestBill([task(TaskState.DISCLOSED, 60), task(TaskState.DISCLOSED, 30), task(TaskState.EXECUTED, 600, 12.5), task(TaskState.FINISHED, 60), task(TaskState.REQUESTED, 60)]);
  assert.deepEqual(b, { tasks: 3, slotSeconds: 102.5, unknown: 0 });
  assert.equal(requestCostText(b), "The estimates imply about 103\u00a0slot-seconds billed.");
});

test("requestCostText keeps a bound a bound", () => {
  const b = requestBill([task(TaskState.DISCLOSED, 3600), task(TaskState.DISCLOSED, 0)]);
  assert.deepEqual(b, { tasks: 2, slotSeconds: 3600, unknown: 1 });
  assert.equal(requestCostText(b), "The estimates imply at least 3,600\u00a0slot-seconds billed; 1 task without an estimate would add to it.");
  assert.equal(requestCostText(requestBill([task(TaskState.DISCLOSED, 0)])), "None of the 1 task has an estimate: the bill cannot be told in advance.");
});
