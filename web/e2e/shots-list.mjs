// Screenshots of the set list, the overview, the disclose form with its
// options, a set's and the cluster's charts over time, at 390×844 and
// 1280×800, in the light and the dark scheme, into docs/screenshots/web/:
//
//   BATCHD_BIN=/path/to/batchd node e2e/shots-list.mjs
//
// The server runs two local slots; sets end done, failed and canceled, and
// one keeps running, so that every badge shows.
import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { addUser, launch, needBin, serverLog, startServer, step, stepTimeout, stop, waitReady } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "..", "..", "docs", "screenshots", "web");
needBin();
await mkdir(outDir, { recursive: true });
const data = await mkdtemp(join(tmpdir(), "batchd-web-shots-"));
const server = startServer("127.0.0.1:0", data, ["--slots", "2"]);
let browser;
let failed = false;
try {
  const base = await waitReady(server);
  const token = await addUser(data, "dana");
  const call = async (method, body) => {
    const r = await fetch(`${base}/batch.v1.TaskSetService/${method}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    const j = await r.json();
    if (!r.ok) throw new Error(`${method}: ${r.status} ${JSON.stringify(j)}`);
    return j;
  };
  const disclose = async (name, argv, n, extra = {}) =>
    BigInt((await call("Disclose", { name, tasks: Array.from({ length: n }, (_, i) => ({ argv: ["sh", "-c", argv.replace("$I", i)], estimateSeconds: 2 })), idempotencyKey: name, request: true, ...extra })).taskSet.id);

  step("sets that end done, failed and canceled, and one that keeps running");
  await disclose("render frames", "sleep 0.2; echo frame $I", 12, { labels: [{ key: "proj", value: "film" }] });
  await disclose("flaky checks", "exit $(( $I % 3 == 0 ? 3 : 0 ))", 6);
  const canceled = await disclose("abandoned sweep", "sleep 30", 4);
  await call("Cancel", { setId: String(canceled), all: true });
  for (let i = 1; i <= 6; i++) await disclose(`sweep ${i}`, "sleep 0.1", 3, { labels: [{ key: "proj", value: "sweep" }] });
  const running = await disclose("long simulation", "sleep 600", 40, { maxRunning: 2 });
  // Let the short sets end and the samples gather (one every 10 s).
  await new Promise((r) => setTimeout(r, 25_000));

  browser = await launch();
  for (const scheme of ["light", "dark"]) {
    for (const [width, height] of [[1280, 800], [390, 844]]) {
      const context = await browser.newContext({ viewport: { width, height }, colorScheme: scheme });
      await context.addInitScript((t) => sessionStorage.setItem("batchd.token", t), token);
      const page = await context.newPage();
      page.setDefaultTimeout(stepTimeout);
      const shot = async (name) => {
        await page.waitForTimeout(300);
        await page.screenshot({ path: join(outDir, `${name}-${width}-${scheme}.png`), fullPage: width === 390 });
      };
      step(`${width}×${height} ${scheme}`);
      await page.goto(base + "/");
      await page.locator('#overview-stats [data-stat="load"]').waitFor();
      await page.locator("#set-list li").nth(5).waitFor();
      await shot("sets-overview");
      await page.locator("#disclose-opts summary").click();
      await page.locator("#disclose-form").scrollIntoViewIfNeeded();
      await shot("disclose-options");
      await page.locator("#sets-state").selectOption("failed");
      await page.locator('#set-list a[data-state="failed"]').first().waitFor();
      await page.locator("#sets-state").selectOption("");
      await page.locator("#sets-q").fill("sweep");
      await page.locator("#set-list li").nth(5).waitFor();
      await shot("sets-search");
      await page.locator("#sets-q").fill("");
      await page.evaluate((id) => (location.hash = `#/sets/${id}`), String(running));
      await page.locator("#set-history .hchart-line").first().waitFor({ state: "attached" });
      await page.locator("#set-history").scrollIntoViewIfNeeded();
      await shot("set-history");
      await page.evaluate(() => (location.hash = "#/cluster"));
      await page.locator("#history .hchart-line").first().waitFor({ state: "attached" });
      await page.locator("#history").scrollIntoViewIfNeeded();
      await shot("cluster-history");
      await context.close();
    }
  }
  console.log(`e2e shots: written to ${outDir}`);
} catch (e) {
  failed = true;
  console.error("e2e shots FAILED:", e.message);
  console.error(serverLog().slice(-3000));
} finally {
  await browser?.close();
  await stop(server);
}
process.exit(failed ? 1 : 0);
