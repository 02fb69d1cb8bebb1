import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { billSegments, chartSummary } from "../src/chart";
import { freeParts } from "../src/free";
import { BillTotalsSchema } from "../src/gen/batch/v1/billing_pb";
import { FreeWorkSchema } from "../src/gen/batch/v1/types_pb";

const free = create(FreeWorkSchema, {
  executedUnrequestedSlotSeconds: 5,
  speculativeLostSlotSeconds: 3,
  canceledSlotSeconds: 4,
  lostWithWorkerSlotSeconds: 8,
});

test("billSegments shows billed work and the four parts of free work, scaled to the largest bar", () => {
  const t = create(BillTotalsSchema, { billedSlotSeconds: 10, freeSlotSeconds: 20, free });
  const got = billSegments(t).map((s) => [s.key, s.label, s.slotSeconds, s.fraction]);
  assert.deepEqual(got, [
    ["billed", "Billed (requested work)", 10, 1],
    ["executed_unrequested", "Free: executed but never requested", 5, 0.5],
    ["speculative_lost", "Free: losing speculative copies", 3, 0.3],
    ["canceled", "Free: canceled", 4, 0.4],
    ["lost_with_worker", "Free: lost with a worker", 8, 0.8],
  ]);
});

test("freeParts names the parts as the server does, each with its own seconds", () => {
  // The same keys as batchd_free_slot_seconds_total{part} and batchctl.
  assert.deepEqual(
    freeParts(free).map((p) => [p.key, p.slotSeconds]),
    [
      ["executed_unrequested", 5],
      ["speculative_lost", 3],
      ["canceled", 4],
      ["lost_with_worker", 8],
    ],
  );
  // Canceled and lost work is never folded into the speculative part.
  const onlyCanceledAndLost = create(FreeWorkSchema, { canceledSlotSeconds: 2, lostWithWorkerSlotSeconds: 1 });
  assert.equal(freeParts(onlyCanceledAndLost).find((p) => p.key === "speculative_lost")?.slotSeconds, 0);
});

test("an empty bill draws no bars", () => {
  assert.deepEqual(billSegments(undefined).map((s) => s.fraction), [0, 0, 0, 0, 0]);
  assert.equal(chartSummary(undefined), "No work has run for you yet.");
});

test("chartSummary gives the billed share", () => {
  assert.equal(chartSummary(create(BillTotalsSchema, { billedSlotSeconds: 1, freeSlotSeconds: 3 })), "25% of the slot time spent on your work is billed; 75% is free.");
});
