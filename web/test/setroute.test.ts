import { test } from "node:test";
import assert from "node:assert/strict";
import { routeText } from "../src/setroute";

test("routeText names the pool and partition, and nothing for an unrouted set", () => {
  assert.equal(routeText({ pool: "", partition: "" }), "");
  assert.equal(routeText({ pool: "gpu", partition: "" }), "runs only in pool gpu");
  assert.equal(routeText({ pool: "", partition: "long" }), "runs only in partition long");
  assert.equal(routeText({ pool: "slurm", partition: "long" }), "runs only in pool slurm, partition long");
});
