// Bundles scripts/mock-server.ts for Node and runs it (see that file).
import * as esbuild from "esbuild";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "test", ".build", "mock-server.mjs");
await esbuild.build({ absWorkingDir: root, entryPoints: ["scripts/mock-server.ts"], bundle: true, platform: "node", format: "esm", target: "node20", outfile: out, logLevel: "warning" });
const p = spawn(process.execPath, [out, root], { stdio: "inherit" });
for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => p.kill(s));
p.on("exit", (code) => process.exit(code ?? 0));
