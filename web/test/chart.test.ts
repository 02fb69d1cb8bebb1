import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { billSegments, chartSummary } from "../src/chart";
import { BillTotalsSchema } from "../src/gen/batch/v1/billing_pb";

test("billSegments splits free work and scales to the largest bar", () => {
  const t = create(BillTotalsSchema, {
    billedSlotSeconds: 10,
    freeSlotSeconds: 20,
    executedUnrequestedSlotSeconds: 5,
    speculativeWasteSlotSeconds: 3,
  });
  const got = billSegments(t).map((s) => [s.key, s.slotSeconds, s.fraction]);
  assert.deepEqual(got, [
    ["billed", 10, 10 / 12],
    ["executed", 5, 5 / 12],
    ["waste", 3, 3 / 12],
    ["otherFree", 12, 1],
  ]);
});

test("billSegments never invents free work beyond the total", () => {
  const t = create(BillTotalsSchema, { billedSlotSeconds: 0, freeSlotSeconds: 4, executedUnrequestedSlotSeconds: 3, speculativeWasteSlotSeconds: 3 });
  const got = billSegments(t).map((s) => s.slotSeconds);
  assert.deepEqual(got, [0, 3, 1, 0]);
});

test("an empty bill draws no bars", () => {
  assert.deepEqual(billSegments(undefined).map((s) => s.fraction), [0, 0, 0, 0]);
  assert.equal(chartSummary(undefined), "No work has run for you yet.");
});

test("chartSummary gives the billed share", () => {
  assert.equal(chartSummary(create(BillTotalsSchema, { billedSlotSeconds: 1, freeSlotSeconds: 3 })), "25% of the slot time spent on your work is billed; 75% is free.");
});
