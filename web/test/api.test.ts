import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { authInterceptor, clientsFor, storageTokenStore, TokenKey } from "../src/api";
import type { TokenStore } from "../src/api";
import { describeError } from "../src/errors";
import { ClusterService, GetClusterResponseSchema } from "../src/gen/batch/v1/cluster_pb";

function memoryStorage() {
  const m = new Map<string, string>();
  return {
    m,
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
  };
}

test("the token store keeps one key and clears it with an empty token", () => {
  const s = memoryStorage();
  const t = storageTokenStore(s);
  assert.equal(t.get(), "");
  t.set("abc");
  assert.equal(s.m.get(TokenKey), "abc");
  assert.equal(t.get(), "abc");
  t.set("");
  assert.equal(s.m.has(TokenKey), false);
});

test("the interceptor sends the bearer token only when one is stored", async () => {
  const got: (string | null)[] = [];
  let token = "";
  const tokens: TokenStore = { get: () => token, set: (v) => (token = v) };
  const transport = createRouterTransport(
    ({ service }) => {
      service(ClusterService, {
        getCluster(_req, ctx) {
          const a = ctx.requestHeader.get("authorization");
          got.push(a);
          if (a !== "Bearer s3cret") throw new ConnectError("sign in", Code.Unauthenticated);
          return create(GetClusterResponseSchema, { slots: 4 });
        },
      });
    },
    { transport: { interceptors: [authInterceptor(tokens)] } },
  );
  const c = clientsFor(transport);
  let err: unknown;
  try {
    await c.cluster.getCluster({});
  } catch (e) {
    err = e;
  }
  const p = describeError(err, "Reading the cluster");
  assert.equal(p.code, Code.Unauthenticated);
  assert.ok(p.signIn);
  tokens.set("  s3cret ");
  const r = await c.cluster.getCluster({});
  assert.equal(r.slots, 4);
  assert.deepEqual(got, [null, "Bearer s3cret"]);
  await assert.rejects(c.cluster.getCluster({}, { headers: { Authorization: "Bearer candidate" } }));
  assert.equal(got.at(-1), "Bearer candidate", "a call that names its own token sends that one, not the stored one");
});

test("describeError: server codes and network failures", () => {
  const nf = describeError(new ConnectError("task set 9 not found", Code.NotFound), "Opening set 9");
  assert.equal(nf.title, "Opening set 9: it was not found.");
  assert.equal(nf.detail, "task set 9 not found", "the server's message without the code prefix");
  assert.equal(nf.retryable, false);
  const fp = describeError(new ConnectError("task 2 is not requested", Code.FailedPrecondition), "Reading output");
  assert.equal(fp.retryable, false);
  assert.match(fp.hint, /request it first/);
  const net = describeError(new TypeError("Failed to fetch"), "Listing");
  assert.equal(net.code, Code.Unavailable);
  assert.ok(net.retryable);
  assert.match(net.hint, /batchd is running/);
  const internal = describeError(new ConnectError("internal error", Code.Internal), "Disclosing");
  assert.ok(internal.retryable);
  assert.equal(internal.signIn, false);
});
