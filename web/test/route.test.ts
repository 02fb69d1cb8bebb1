import { test } from "node:test";
import assert from "node:assert/strict";
import { parseRoute, routeHash, sameSet } from "../src/route";

test("parseRoute", () => {
  assert.deepEqual(parseRoute(""), { view: "sets" });
  assert.deepEqual(parseRoute("#/sets"), { view: "sets" });
  assert.deepEqual(parseRoute("#/sets/42"), { view: "sets", setId: 42n });
  assert.deepEqual(parseRoute("#/sets/0"), { view: "sets" });
  assert.deepEqual(parseRoute("#/sets/abc"), { view: "sets" });
  assert.deepEqual(parseRoute("#/sets/99999999999999999999"), { view: "sets" }, "beyond int64 is not a set");
  assert.deepEqual(parseRoute("#/bill"), { view: "bill" });
  assert.deepEqual(parseRoute("#cluster"), { view: "cluster" });
  assert.deepEqual(parseRoute("#/nowhere"), { view: "sets" });
});

test("parseRoute reads a task, its output line and the table's state", () => {
  assert.deepEqual(parseRoute("#/sets/4/tasks/17"), { view: "sets", setId: 4n, task: 17 });
  assert.deepEqual(parseRoute("#/sets/4/tasks/0/L42"), { view: "sets", setId: 4n, task: 0, line: 42 });
  assert.deepEqual(parseRoute("#/sets/4/tasks/3?line=9"), { view: "sets", setId: 4n, task: 3, line: 9 });
  assert.deepEqual(parseRoute("#/sets/4/tasks/-1"), { view: "sets", setId: 4n }, "no negative index");
  assert.deepEqual(parseRoute("#/sets/4/tasks/01"), { view: "sets", setId: 4n }, "one spelling of an index");
  assert.deepEqual(parseRoute("#/sets/4/tasks/3/L0"), { view: "sets", setId: 4n, task: 3 }, "lines count from 1");
  assert.deepEqual(parseRoute("#/sets/4?state=failed&sort=index-desc&q=frame%201"), { view: "sets", setId: 4n, state: "failed", sort: "index-desc", q: "frame 1" });
});

test("routeHash round-trips", () => {
  for (const h of ["#/sets", "#/sets/7", "#/bill", "#/cluster", "#/sets/7/tasks/3", "#/sets/7/tasks/3/L12", "#/sets/7/tasks/3?state=failed&sort=state&q=a+b"]) {
    assert.equal(routeHash(parseRoute(h)), h);
  }
});

test("sameSet keeps a set's view across its tasks and table state", () => {
  assert.ok(sameSet(parseRoute("#/sets/7"), parseRoute("#/sets/7/tasks/1")));
  assert.ok(!sameSet(parseRoute("#/sets/7"), parseRoute("#/sets/8")));
  assert.ok(!sameSet(parseRoute("#/sets"), parseRoute("#/sets")));
  assert.ok(!sameSet(undefined, parseRoute("#/sets/7")));
});
