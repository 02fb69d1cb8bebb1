import { test } from "node:test";
import assert from "node:assert/strict";
import { parseDiscloseForm } from "../src/form";
import { emptyOptions, parseAfter, parseMiB, parseOptions } from "../src/formopts";

test("parseMiB reads sizes as batchctl --memory does", () => {
  assert.equal(parseMiB(""), 0n);
  assert.equal(parseMiB("512"), 512n);
  assert.equal(parseMiB("512M"), 512n);
  assert.equal(parseMiB("2G"), 2048n);
  assert.equal(parseMiB("1.5GiB"), 1536n);
  assert.equal(parseMiB("100K"), 1n);
  assert.equal(typeof parseMiB("lots"), "string");
});

test("parseAfter reads sets and tasks with :ok or :any", () => {
  assert.deepEqual(parseAfter("12 13/4:any"), [
    { setId: 12n, index: undefined, anyOutcome: false },
    { setId: 13n, index: 4, anyOutcome: true },
  ]);
  assert.equal(typeof parseAfter("12:maybe"), "string");
  assert.equal(typeof parseAfter("0"), "string");
});

test("parseOptions: nothing set sends nothing", () => {
  const r = parseOptions(emptyOptions());
  assert.ok(!("errors" in r));
  assert.equal(r.set.retry, undefined);
  assert.equal(r.set.stop, undefined);
  assert.deepEqual(r.task, { timeoutSeconds: 0, cpus: 0, memoryMb: 0n });
});

test("parseOptions errors name their fields", () => {
  const r = parseOptions({ ...emptyOptions(), retries: "101", retryOn: "sometimes", cpus: "0", stopOnOutput: "(", labels: "x" });
  assert.ok("errors" in r);
  assert.deepEqual(Object.keys(r.errors).sort(), ["cpus", "labels", "retries", "retryOn", "stopOnOutput"]);
});

test("the form sends its options on the set and each task", () => {
  const opts = { ...emptyOptions(), retries: "2", timeout: "1m", maxRunning: "4", cpus: "2", memory: "1G", stopAfter: "3", after: "5", labels: "a=b" };
  const r = parseDiscloseForm({ name: "n", commands: "echo 1\necho 2", estimate: "", requestNow: false, noSpeculation: false, opts }, "k");
  assert.ok(r.ok);
  const q = r.request;
  assert.equal(q.maxRunning, 4);
  assert.deepEqual(q.retry, { retries: 2, exitCodes: [], nonzero: true, timeout: true, lost: false });
  assert.deepEqual(q.stop, { onSuccess: false, onExit: [], onOutput: "", after: 3 });
  assert.deepEqual(q.labels, [{ key: "a", value: "b" }]);
  assert.equal(q.tasks?.length, 2);
  assert.equal(q.tasks?.[1].timeoutSeconds, 60);
  assert.equal(q.tasks?.[1].cpus, 2);
  assert.equal(q.tasks?.[1].memoryMb, 1024n);
  const bad = parseDiscloseForm({ name: "n", commands: "echo", estimate: "", requestNow: false, noSpeculation: false, opts: { ...opts, memory: "x" } }, "k");
  assert.ok(!bad.ok && bad.errors.memory);
});
