// The few declarations of node:test and node:assert the unit tests use
// (kept here instead of installing @types/node).

declare module "node:test" {
  type Fn = (t: TestContext) => void | Promise<void>;
  interface TestContext {
    test(name: string, fn: Fn): Promise<void>;
  }
  export function test(name: string, fn: Fn): void;
  export function describe(name: string, fn: () => void): void;
}

declare module "node:assert/strict" {
  function ok(value: unknown, message?: string): asserts value;
  function equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
  function notEqual(actual: unknown, expected: unknown, message?: string): void;
  function deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
  function match(value: string, re: RegExp, message?: string): void;
  function throws(fn: () => unknown, message?: string): void;
  function rejects(p: Promise<unknown> | (() => Promise<unknown>), message?: string): Promise<void>;
  const assert: {
    ok: typeof ok;
    equal: typeof equal;
    notEqual: typeof notEqual;
    deepEqual: typeof deepEqual;
    match: typeof match;
    throws: typeof throws;
    rejects: typeof rejects;
  };
  export default assert;
}
