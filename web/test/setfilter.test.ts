import { test } from "node:test";
import assert from "node:assert/strict";
import { SetState } from "../src/gen/batch/v1/types_pb";
import { idOf, listRequest, nameGlob, parseLabels, setStateLook } from "../src/setfilter";

test("idOf reads a set id", () => {
  assert.equal(idOf("42"), 42n);
  assert.equal(idOf(" #42 "), 42n);
  assert.equal(idOf("0"), undefined);
  assert.equal(idOf("frames 42"), undefined);
});

test("nameGlob: plain text matches inside a name, a glob is kept", () => {
  assert.equal(nameGlob(""), "");
  assert.equal(nameGlob("old-007"), "*old-007*");
  assert.equal(nameGlob("old-*"), "old-*");
  assert.equal(nameGlob("#12"), "*12*");
});

test("parseLabels", () => {
  assert.deepEqual(parseLabels("a=1, b=2"), [{ key: "a", value: "1" }, { key: "b", value: "2" }]);
  assert.deepEqual(parseLabels("  "), []);
  assert.match(parseLabels("nokey") as string, /KEY=VALUE/);
});

test("listRequest: state, labels, and owner only for admins", () => {
  const f = { q: "x", state: "ended", owner: "*", label: "p=q" };
  const user = listRequest(f, "tok", 50, false);
  assert.ok(typeof user !== "string");
  assert.equal(user.nameGlob, "*x*");
  assert.equal(user.pageToken, "tok");
  assert.deepEqual(user.states, [SetState.DONE, SetState.FAILED, SetState.CANCELED]);
  assert.equal(user.allOwners, undefined);
  const admin = listRequest(f, "", 50, true);
  assert.ok(typeof admin !== "string");
  assert.equal(admin.allOwners, true);
  const bob = listRequest({ ...f, owner: "bob" }, "", 50, true);
  assert.ok(typeof bob !== "string");
  assert.equal(bob.owner, "bob");
  assert.equal(typeof listRequest({ ...f, label: "bad" }, "", 50, false), "string");
});

test("setStateLook tells failed and canceled apart from done", () => {
  const words = [SetState.RUNNING, SetState.FAILED, SetState.CANCELED, SetState.DONE].map((s) => setStateLook(s).word);
  assert.deepEqual(words, ["running", "failed", "canceled", "done"]);
});
