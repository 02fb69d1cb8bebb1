// Runs the unit tests: bundles test/*.test.ts for Node with esbuild (which
// strips types; `npm run check` type-checks them) and runs them with node's
// built-in test runner.
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
import { readdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "test", ".build");
await rm(out, { recursive: true, force: true });
const tests = (await readdir(join(root, "test"))).filter((f) => f.endsWith(".test.ts")).sort();
await esbuild.build({
  absWorkingDir: root,
  entryPoints: tests.map((f) => `test/${f}`),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outdir: out,
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const files = tests.map((f) => join(out, f.replace(/\.ts$/, ".mjs")));
// Times are shown in the browser's zone: the tests pin it to UTC, so that
// they read the same on every machine.
const r = spawnSync(process.execPath, ["--test", ...process.argv.slice(2), ...files], { stdio: "inherit", env: { ...process.env, TZ: "UTC" } });
process.exit(r.status ?? 1);
