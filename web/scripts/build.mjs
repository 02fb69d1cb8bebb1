// Builds the page into dist/: one JS and one CSS bundle named by a hash of
// their content, and index.html pointing at them. The output depends only
// on the sources (not on where the tree is checked out), so CI can rebuild
// and check `git diff --exit-code web/dist`.
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/main.ts"],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome110", "firefox115", "safari16"],
  outdir: "dist",
  entryNames: "app",
  legalComments: "none",
  write: false,
  logLevel: "warning",
});

await mkdir(dist, { recursive: true });
for (const f of await readdir(dist)) await rm(join(dist, f), { recursive: true });
const names = {};
for (const out of result.outputFiles) {
  const ext = extname(out.path);
  const hash = createHash("sha256").update(out.contents).digest("hex").slice(0, 12);
  names[ext] = `app-${hash}${ext}`;
  await writeFile(join(dist, names[ext]), out.contents);
}
if (!names[".js"] || !names[".css"]) throw new Error(`build produced ${Object.keys(names)}, want .js and .css`);
const html = (await readFile(join(root, "src/index.html"), "utf8")).replace("{{js}}", names[".js"]).replace("{{css}}", names[".css"]);
await writeFile(join(dist, "index.html"), html);
console.log(`dist: index.html, ${names[".js"]} and ${names[".css"]}`);
