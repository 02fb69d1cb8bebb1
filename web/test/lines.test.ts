import { test } from "node:test";
import assert from "node:assert/strict";
import { LineBuffer } from "../src/lines";

const enc = new TextEncoder();

test("LineBuffer hands out complete lines and keeps the unfinished one", () => {
  const b = new LineBuffer();
  assert.deepEqual(b.push(enc.encode("one\ntw")), ["one"]);
  assert.equal(b.pending(), "tw");
  assert.deepEqual(b.push(enc.encode("o\n\nthree")), ["two", ""]);
  assert.equal(b.count, 3);
  assert.equal(b.pending(), "three");
  b.reset();
  assert.equal(b.count, 0);
  assert.equal(b.pending(), "");
});

test("LineBuffer joins a character split between two messages", () => {
  const b = new LineBuffer();
  const bytes = enc.encode("é\n");
  assert.deepEqual(b.push(bytes.slice(0, 1)), []);
  assert.deepEqual(b.push(bytes.slice(1)), ["é"]);
});
