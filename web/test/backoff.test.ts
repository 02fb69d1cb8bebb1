import { test } from "node:test";
import assert from "node:assert/strict";
import { Backoff } from "../src/backoff";

test("doubles from the initial delay up to the cap, without jitter", () => {
  const b = new Backoff({ initialMs: 250, maxMs: 8000, random: () => 0 });
  const got = Array.from({ length: 8 }, () => b.next());
  assert.deepEqual(got, [250, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
  assert.equal(b.attempts, 8);
});

test("jitter shortens each delay by at most its fraction", () => {
  const b = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.2, random: () => 0.5 });
  assert.equal(b.next(), 900);
  const worst = new Backoff({ initialMs: 1000, jitter: 0.2, random: () => 0.999999 });
  assert.ok(worst.next() >= 800);
});

test("reset starts again", () => {
  const b = new Backoff({ random: () => 0 });
  b.next();
  b.next();
  b.reset();
  assert.equal(b.attempts, 0);
  assert.equal(b.next(), 250);
});
