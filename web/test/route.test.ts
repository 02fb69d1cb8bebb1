import { test } from "node:test";
import assert from "node:assert/strict";
import { parseRoute, routeHash } from "../src/route";

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

test("routeHash round-trips", () => {
  for (const h of ["#/sets", "#/sets/7", "#/bill", "#/cluster"]) assert.equal(routeHash(parseRoute(h)), h);
});
