import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { HistorySampleSchema } from "../src/gen/batch/v1/history_pb";
import { fmtValue, historySeries, historySummary, linePoints } from "../src/history";

const at = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

test("historySeries: queued of both classes, running, and done per minute", () => {
  const samples = [
    create(HistorySampleSchema, { at: at(1000), queuedRequested: 3n, queuedDisclosed: 2n, running: 1n, done: 0n }),
    create(HistorySampleSchema, { at: at(1010), queuedRequested: 1n, queuedDisclosed: 0n, running: 2n, done: 3n }),
  ];
  const [q, r, tp] = historySeries(samples, 10, false);
  assert.deepEqual(q.points, [[10, 5], [0, 1]]);
  assert.equal(q.max, 5);
  assert.equal(r.label, "Running copies");
  assert.equal(r.last, 2);
  assert.deepEqual(tp.points.map(([, v]) => v), [0, 18], "3 tasks in 10 s is 18 a minute");
  assert.equal(historySeries(samples, 10, true)[1].label, "Running tasks");
});

test("historySeries drops samples older than the hour; a shorter span is the window, from a minute", () => {
  const samples = [1, 100, 3700].map((s) => create(HistorySampleSchema, { at: at(s), running: 1n }));
  assert.equal(historySeries(samples, 10, false)[1].points.length, 2);
  assert.equal(historySeries(samples, 10, false)[1].window, 3600);
  assert.equal(historySeries(samples.slice(1), 10, false)[1].window, 3600);
  const short = [100, 400].map((s) => create(HistorySampleSchema, { at: at(s) }));
  assert.equal(historySeries(short, 10, false)[0].window, 300);
  assert.equal(historySeries(short.slice(1), 10, false)[0].window, 60);
});

test("linePoints: now at the right edge, the max at the top, zeros at the bottom", () => {
  const s = { key: "running" as const, label: "", unit: "", points: [[3600, 0], [1800, 2], [0, 4]] as [number, number][], last: 4, max: 4, window: 3600 };
  assert.equal(linePoints(s, 360, 50), "0,50 180,25 360,0");
  assert.equal(linePoints({ ...s, points: [[0, 0]], max: 0 }, 360, 50), "360,50");
  assert.equal(linePoints({ ...s, points: [[60, 1], [0, 4]], window: 60 }, 360, 50), "0,37.5 360,0", "a minute of samples spans the width");
});

test("fmtValue and historySummary", () => {
  assert.equal(fmtValue(1.5), "1.5");
  assert.equal(fmtValue(12345), "12,345");
  assert.match(historySummary(historySeries([], 10, false)), /No samples yet/);
  const one = historySeries([create(HistorySampleSchema, { at: at(5), running: 2n })], 10, false);
  assert.match(historySummary(one), /Running copies: 2 copies now, at most 2/);
});
