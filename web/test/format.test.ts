import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  commandText,
  fmtAtLeast,
  fmtEta,
  copyLabel,
  fmtBytes,
  fmtClock,
  fmtClockUTC,
  fmtCount,
  fmtDuration,
  fmtNumber,
  fmtPercent,
  keptFileName,
  outputFileName,
  plural,
  shellQuote,
  taskStateName,
  tsSeconds,
} from "../src/format";
import { CopySchema, CopyState, TaskSpecSchema, TaskState } from "../src/gen/batch/v1/types_pb";

test("fmtDuration", () => {
  const cases: [number, string][] = [
    [0, "0.00 s"],
    [0.0031, "3.1 ms"],
    [0.00001, "0.01 ms"],
    [0.01, "0.01 s"],
    [0.4249, "0.42 s"],
    [9.999, "10.00 s"],
    [12.34, "12.3 s"],
    [59.94, "59.9 s"],
    [60, "1 m 00 s"],
    [245, "4 m 05 s"],
    [3599.4, "59 m 59 s"],
    [3600, "1 h 00 m"],
    [7380, "2 h 03 m"],
    [-1, "—"],
    [NaN, "—"],
    [Infinity, "—"],
  ];
  for (const [s, want] of cases) assert.equal(fmtDuration(s), want, `fmtDuration(${s})`);
});

test("fmtNumber drops trailing zeros", () => {
  assert.equal(fmtNumber(1.5), "1.5");
  assert.equal(fmtNumber(2), "2");
  assert.equal(fmtNumber(2.004), "2");
  assert.equal(fmtNumber(1234.5678, 1), "1234.6");
  assert.equal(fmtNumber(0.1 + 0.2), "0.3");
  assert.equal(fmtNumber(NaN), "—");
  assert.equal(fmtNumber(0.0031), "0.0031", "small but not zero");
  assert.equal(fmtNumber(-0.000123456), "-0.00012");
  assert.equal(fmtNumber(0), "0");
});

test("fmtBytes", () => {
  assert.equal(fmtBytes(0), "0 B");
  assert.equal(fmtBytes(1023), "1023 B");
  assert.equal(fmtBytes(1536), "1.5 KiB");
  assert.equal(fmtBytes(16n << 20n), "16 MiB");
  assert.equal(fmtBytes(-1), "—");
});

test("fmtPercent", () => {
  assert.equal(fmtPercent(-1), "—");
  assert.equal(fmtPercent(0), "0%");
  assert.equal(fmtPercent(0.426), "43%");
  assert.equal(fmtPercent(1.2), "100%");
});

test("timestamps", () => {
  assert.equal(tsSeconds(undefined), undefined);
  assert.equal(tsSeconds(timestampFromMs(0)), undefined, "the zero Timestamp is unset");
  assert.equal(tsSeconds(timestampFromMs(1500)), 1.5);
  assert.equal(fmtClock(timestampFromMs(Date.UTC(2026, 10, 22, 2, 34, 26, 900)), "UTC"), "2026-11-22 02:34:26");
  assert.equal(fmtClock(timestampFromMs(Date.UTC(2026, 10, 22, 2, 34, 26, 900)), "Europe/Berlin"), "2026-11-22 03:34:26");
  assert.equal(fmtClockUTC(timestampFromMs(Date.UTC(2026, 10, 22, 2, 34, 26, 900))), "2026-11-22 02:34:26Z");
  assert.equal(fmtClock(undefined), "—");
});

test("state names", () => {
  assert.equal(taskStateName(TaskState.DISCLOSED), "disclosed");
  assert.equal(taskStateName(TaskState.EXECUTED), "executed");
  assert.equal(taskStateName(TaskState.REQUESTED), "requested");
  assert.equal(taskStateName(TaskState.FINISHED), "finished");
  assert.equal(taskStateName(TaskState.CANCELED), "canceled");
  assert.equal(taskStateName(99 as TaskState), "unknown");
});

test("shellQuote and commandText", () => {
  assert.equal(shellQuote("ls"), "ls");
  assert.equal(shellQuote("a b"), "'a b'");
  assert.equal(shellQuote(""), "''");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(commandText(create(TaskSpecSchema, { argv: ["sh", "-c", "echo hi | wc -c"] })), "echo hi | wc -c");
  assert.equal(commandText(create(TaskSpecSchema, { argv: ["render", "--frame", "1 2"] })), "render --frame '1 2'");
  assert.equal(commandText(create(TaskSpecSchema, { argv: ["sh", "-c", "x", "y"] })), "sh -c x y");
  assert.equal(commandText(undefined), "");
});

test("copyLabel marks speculative copies and progress", () => {
  const c = create(CopySchema, { id: 12n, worker: "w1", slot: 0, speculative: true, state: CopyState.RUNNING, progress: 0.4 });
  assert.equal(copyLabel(c), "#12 w1/0 speculative running 40%");
  const d = create(CopySchema, { id: 3n, worker: "w2", slot: 1, state: CopyState.WON, progress: 1 });
  assert.equal(copyLabel(d), "#3 w2/1 won");
  const e = create(CopySchema, { id: 4n, worker: "w2", slot: 1, state: CopyState.RUNNING, progress: -1 });
  assert.equal(copyLabel(e), "#4 w2/1 running");
});

test("outputFileName", () => {
  assert.equal(outputFileName(7n, 2, "stdout"), "set-7-task-2.stdout.txt");
});

test("keptFileName flattens the path", () => {
  assert.equal(keptFileName(7n, 2, "out/a.csv"), "set-7-task-2-out_a.csv");
  assert.equal(keptFileName(7n, 2, "result.txt"), "set-7-task-2-result.txt");
});

test("fmtCount separates thousands", () => {
  assert.deepEqual([0, 7, 1234, 100_000].map(fmtCount), ["0", "7", "1,234", "100,000"]);
  assert.equal(fmtCount(2_000_000n), "2,000,000");
});

test("plural counts a noun", () => {
  assert.deepEqual([plural(1, "task"), plural(1n, "task"), plural(0, "task"), plural(2_000n, "unrequested task")], ["1 task", "1 task", "0 tasks", "2,000 unrequested tasks"]);
});

test("fmtAtLeast and fmtEta: bounds read as bounds", () => {
  assert.equal(fmtAtLeast(256, true), "256");
  assert.equal(fmtAtLeast(256n, false), "≥ 256");
  assert.equal(fmtEta(-1, false), "unknown");
  assert.equal(fmtEta(-1, true), "unknown");
  assert.equal(fmtEta(0, false), "now");
  assert.equal(fmtEta(233, false), `~${fmtDuration(233)}`);
  assert.equal(fmtEta(233, true), `not before ~${fmtDuration(233)}`);
  assert.equal(fmtEta(-1, false, true), "unknown: it has run past its estimate");
});

test("fmtLocal and fmtUTC", async () => {
  const { fmtLocal, fmtUTC } = await import("../src/format");
  assert.equal(fmtUTC(1795833266), "2026-11-28 02:34:26Z");
  assert.equal(fmtLocal(1795833266, "UTC"), "2026-11-28 02:34:26");
  assert.equal(fmtLocal(1795833266, "Europe/Berlin"), "2026-11-28 03:34:26");
  assert.equal(fmtLocal(1795833266, "America/New_York"), "2026-11-27 21:34:26");
});

test("fmtQty keeps separators and the unit with its number", async () => {
  const { fmtQty, nbsp } = await import("../src/format");
  assert.equal(fmtQty(100294, "slot-seconds"), "100,294\u00a0slot-seconds");
  assert.equal(fmtQty(392.564, "slot-s"), "392.56\u00a0slot-s");
  assert.equal(fmtQty(0.0004, "slot-s"), "0.0004\u00a0slot-s");
  assert.equal(fmtQty(1234567.5, "s", 1), "1,234,567.5\u00a0s");
  assert.equal(nbsp("4 m 05 s"), "4\u00a0m\u00a005\u00a0s");
});
