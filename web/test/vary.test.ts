import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { TaskSpecSchema } from "../src/gen/batch/v1/types_pb";
import { CommandParts } from "../src/vary";

const sh = (cmd: string, env: Record<string, string> = {}) => create(TaskSpecSchema, { argv: ["sh", "-c", cmd], env });

function parts(...specs: ReturnType<typeof sh>[]) {
  const p = new CommandParts();
  for (const s of specs) p.add(s);
  return p;
}

test("the command column shows the part that differs, numbers whole", () => {
  const cmds = Array.from({ length: 300 }, (_, i) => sh(`./render --scene big.blend --frame ${i} --out /data/frames`));
  const p = parts(...cmds);
  assert.deepEqual(p.shared(), { prefix: "./render --scene big.blend --frame ", suffix: " --out /data/frames" });
  assert.deepEqual([0, 9, 10, 11, 299].map((i) => p.varying(cmds[i])), ["0", "9", "10", "11", "299"]);
});

test("a number is never cut: 10 and 11 differ in 10 and 11; 0.1 and 0.2 in 0.1 and 0.2", () => {
  const p = parts(sh("frame-10.png"), sh("frame-11.png"), sh("frame-120.png"));
  assert.deepEqual([p.varying(sh("frame-10.png")), p.varying(sh("frame-120.png"))], ["10", "120"]);
  const q = parts(sh("sleep 0.1"), sh("sleep 0.2"));
  assert.equal(q.varying(sh("sleep 0.2")), "0.2");
  const r = parts(sh("run 1"), sh("run 12"));
  assert.deepEqual([r.varying(sh("run 1")), r.varying(sh("run 12"))], ["1", "12"]);
});

test("nothing shared, a lone task, or identical commands: the whole command", () => {
  const a = parts(sh("echo result-zero"), sh("sleep 120; echo result-one"));
  assert.equal(a.shared(), undefined);
  assert.equal(a.varying(sh("sleep 120; echo result-one")), "sleep 120; echo result-one");
  const one = parts(sh("make all"));
  assert.equal(one.shared(), undefined);
  assert.equal(one.varying(sh("make all")), "make all");
  const same = parts(sh("make all"), sh("make all"));
  assert.equal(same.shared(), undefined);
  assert.equal(same.varying(sh("make all")), "make all");
});

test("a varying environment is shown as KEY=value; a shared one is not", () => {
  const specs = [0, 1, 2].map((i) => sh("./sim", { SEED: String(i), MODE: "fast" }));
  const p = parts(...specs);
  assert.deepEqual(p.varyingEnv(), ["SEED"]);
  assert.equal(p.varying(specs[2]), "2", "the same command, the seed differs: its value alone");
  assert.equal(p.sameCommand(), "./sim", "the one command, for the note above the table");
  const two = parts(sh("./sim", { A: "1", B: "x" }), sh("./sim", { A: "2", B: "y" }));
  assert.equal(two.varying(sh("./sim", { A: "2", B: "y" })), "A=2 B=y", "two varying variables keep their names");
  const q = parts(sh("./sim 1", { SEED: "a" }), sh("./sim 2", { SEED: "b" }));
  assert.equal(q.varying(sh("./sim 2", { SEED: "b" })), "2 SEED=b");
  assert.equal(q.sameCommand(), undefined, "the commands differ");
  const r = parts(sh("./sim", { A: "1" }), sh("./sim"));
  assert.deepEqual(r.varyingEnv(), ["A"], "a key some tasks lack varies");
});

test("argv tasks (not sh -c) are compared as quoted command lines", () => {
  const specs = ["a b", "c d"].map((f) => create(TaskSpecSchema, { argv: ["convert", f, "out.png"] }));
  const p = parts(...specs);
  assert.equal(p.varying(specs[1]), "c d", "the quotes are shared too");
});
