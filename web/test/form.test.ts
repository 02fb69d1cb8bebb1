import { test } from "node:test";
import assert from "node:assert/strict";
import { formKey, MaxKeepPatterns, MaxTasksPerForm, parseArrayRange, parseCommands, parseDiscloseForm, parseEstimate, parseKeep } from "../src/form";
import type { DiscloseForm } from "../src/form";
import commandVectors from "./commands.vectors.json";

test("parseEstimate", () => {
  const ok: [string, number][] = [
    ["", 0],
    ["  ", 0],
    ["90", 90],
    ["90s", 90],
    ["1.5m", 90],
    ["2 min", 120],
    ["1h", 3600],
    [".5", 0.5],
    ["3 S", 3],
  ];
  for (const [in_, want] of ok) assert.equal(parseEstimate(in_), want, `parseEstimate(${JSON.stringify(in_)})`);
  for (const bad of ["-1", "abc", "1d", "1.2.3", "1e3", "m"]) {
    assert.equal(typeof parseEstimate(bad), "string", `parseEstimate(${JSON.stringify(bad)}) must be an error`);
  }
  assert.match(parseEstimate("99999999h") as string, /too large/);
});

test("parseCommands: the rule batchctl --file follows (shared vectors)", () => {
  assert.ok(commandVectors.cases.length > 0);
  for (const c of commandVectors.cases) assert.deepEqual(parseCommands(c.text), c.want, c.name);
});

const base: DiscloseForm = { name: " frames ", commands: "echo 1\necho 2\necho 3", estimate: "2m", requestNow: false, noSpeculation: true };

test("parseDiscloseForm builds a sh -c task per line", () => {
  const r = parseDiscloseForm(base, "k1");
  assert.ok(r.ok);
  assert.equal(r.request.name, "frames");
  assert.equal(r.request.idempotencyKey, "k1");
  assert.equal(r.request.setId, 0n);
  assert.equal(r.request.request, false);
  assert.deepEqual(
    r.request.tasks!.map((t) => [t.argv, t.estimateSeconds, t.noSpeculation]),
    [
      [["sh", "-c", "echo 1"], 120, true],
      [["sh", "-c", "echo 2"], 120, true],
      [["sh", "-c", "echo 3"], 120, true],
    ],
  );
});

test("parseDiscloseForm reports every bad field", () => {
  const r = parseDiscloseForm({ ...base, name: "x".repeat(201), commands: "# only a comment\n", estimate: "soon" }, "k");
  assert.ok(!r.ok);
  assert.deepEqual(Object.keys(r.errors).sort(), ["commands", "estimate", "name"]);
  const many = parseDiscloseForm({ ...base, commands: "true\n".repeat(MaxTasksPerForm + 1) }, "k");
  assert.ok(!many.ok);
  assert.match(many.errors.commands!, /At most/);
});

test("formKey is the same for the same content and differs otherwise", () => {
  assert.equal(formKey(base), formKey({ ...base, name: "frames", commands: "echo 1\n\necho 2\necho 3\n" }));
  assert.notEqual(formKey(base), formKey({ ...base, requestNow: true }));
  assert.notEqual(formKey(base), formKey({ ...base, commands: "echo 1" }));
});

test("parseKeep: globs separated by spaces, under the server's rules", () => {
  assert.deepEqual(parseKeep(""), []);
  assert.deepEqual(parseKeep("  result.txt\tout/*.csv \n"), ["result.txt", "out/*.csv"]);
  for (const bad of ["/etc/passwd", "../x", "a/../b", "./x", "out/", "a//b", "**/*.csv", "x".repeat(257)]) {
    assert.equal(typeof parseKeep(bad), "string", bad);
  }
  assert.equal(typeof parseKeep(Array.from({ length: MaxKeepPatterns + 1 }, (_, i) => `f${i}`).join(" ")), "string");
});

test("parseDiscloseForm gives every task the keep patterns, and refuses bad ones", () => {
  const r = parseDiscloseForm({ ...base, keep: "result.txt out/*.csv" }, "k");
  assert.ok(r.ok);
  assert.deepEqual(r.request.tasks!.map((t) => t.keep), Array(3).fill(["result.txt", "out/*.csv"]));
  const arr = parseDiscloseForm({ ...base, commands: "echo $BATCH_ARRAY_VALUE > f", array: "0-3", keep: "f" }, "k");
  assert.ok(arr.ok);
  assert.deepEqual(arr.request.array!.spec!.keep, ["f"]);
  const bad = parseDiscloseForm({ ...base, keep: "../secret" }, "k");
  assert.ok(!bad.ok);
  assert.deepEqual(Object.keys(bad.errors), ["keep"]);
  assert.notEqual(formKey(base), formKey({ ...base, keep: "f" }));
});

test("parseArrayRange: LOW-HIGH[:STEP], with clear refusals", () => {
  assert.deepEqual(parseArrayRange("0-299"), { first: 0n, last: 299n, step: 1n, count: 300 });
  assert.deepEqual(parseArrayRange(" 3-21:3 "), { first: 3n, last: 21n, step: 3n, count: 7 });
  assert.deepEqual(parseArrayRange("7"), { first: 7n, last: 7n, step: 1n, count: 1 });
  assert.match(parseArrayRange("") as string, /LOW-HIGH/);
  assert.match(parseArrayRange("9-3") as string, /reversed/);
  assert.match(parseArrayRange("0-9:0") as string, /step/);
  assert.match(parseArrayRange("0-9:-2") as string, /step/);
  assert.match(parseArrayRange("a-b") as string, /LOW-HIGH/);
  assert.match(parseArrayRange("0-1000000") as string, /at most 1000000/);
});

test("parseDiscloseForm in array mode sends one array with the chosen shell", () => {
  const r = parseDiscloseForm({ ...base, commands: "echo $BATCH_ARRAY_VALUE", array: "0-10:5", shell: "bash" }, "k");
  assert.ok(r.ok);
  const a = r.request.array!;
  assert.equal(r.request.tasks, undefined);
  assert.equal(a.first, 0n);
  assert.equal(a.last, 10n);
  assert.equal(a.step, 5n);
  assert.deepEqual(a.spec!.argv, ["bash", "-c", "echo $BATCH_ARRAY_VALUE"]);
  const two = parseDiscloseForm({ ...base, array: "0-3" }, "k");
  assert.ok(!two.ok);
  assert.match(two.errors.commands!, /one command/);
  const lines = parseDiscloseForm({ ...base, shell: "bash" }, "k");
  assert.ok(lines.ok);
  assert.deepEqual(lines.request.tasks![0].argv, ["bash", "-c", "echo 1"]);
  assert.notEqual(formKey(base), formKey({ ...base, shell: "bash" }));
});
