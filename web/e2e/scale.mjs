// The page at phone width and at 100,000 tasks, in a real Chromium against
// a real batchd (npm run e2e runs it after run.mjs):
//
//   - every view at 360, 390×844, 1280×800 and 1920 px wide: no page-level
//     horizontal overflow (scrollWidth ≤ innerWidth), the header's user line
//     and Sign out on screen and whole, chart labels at 12 px or more, text
//     that meets WCAG AA contrast; a screenshot of each at 390×844 and
//     1280×800;
//   - sign-in: no "Could not load the list." under the sign-in box, and the
//     focus on the view's heading after signing in and after a route change;
//   - a set of 100,000 tasks disclosed with batchctl (DiscloseStream): the
//     page shows it with only the rows in view in the DOM, the part of each
//     command that differs, a filter by text and by state, a sort, a scroll
//     to its end, and jumps to a running and to a failed task;
//   - the main-thread time of the page while that set runs (sleep tasks on
//     the server's local slots, so the watch stream carries changes), from
//     Chrome's own counters (CDP Performance.getMetrics: ThreadTime, the
//     main thread's CPU time, and TaskDuration) over a window: printed, and
//     the test fails when ThreadTime is above 10% of the window;
//   - canceling the rest asks first, with the count; a set that does not
//     exist leaves the set's actions disabled.
//
// Screenshots go to web/e2e/out/scale/ (the path is printed).
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { a11y, addUser, bin, launch, needBin, serverLog, startServer, step, stepTimeout, stop, text, waitReady } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "out", "scale");
needBin();
const batchctl = process.env.BATCHCTL_BIN
  ? resolve(process.env.INIT_CWD || process.cwd(), process.env.BATCHCTL_BIN)
  : join(dirname(bin), "batchctl");

const TASKS = 100_000;
/** The budget: the page's main thread may be busy at most this share of the time while the set runs. */
const BUDGET = 0.1;
/** The first load of the set (its snapshot on the watch stream) may take in at most this many bytes. */
const MAX_FIRST_LOAD = 3e6;
/**
 * The gate while a task's view is open and its output streams. The aim is
 * 5% (measured 3.7–5.5% at load 5–60, see the page's README); the gate is
 * the set's own 10%, so that a loaded CI machine does not turn a measured
 * figure into a failure, while a redraw loop (tens of %) still fails.
 */
const TASK_VIEW_BUDGET = 0.1;
/** How long main-thread time is counted, and how long the page settles first (seconds). */
const WINDOW_S = Number(process.env.E2E_PERF_WINDOW_S || 15);
const SETTLE_S = Number(process.env.E2E_PERF_SETTLE_S || 20);
/** Every task i with i % 10000 === 7 exits 3: requested, they fail. */
const failing = (i) => i % 10_000 === 7;

const shotSizes = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
];
const allSizes = [{ width: 360, height: 740 }, ...shotSizes, { width: 1920, height: 1080 }];

/** run runs a command and returns its stdout; it fails on a non-zero exit. */
function run(cmd, args) {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (b) => (out += b));
    p.stderr.on("data", (b) => (err += b));
    p.once("exit", (code) => (code === 0 ? res(out) : rej(new Error(`${cmd} ${args.join(" ")} exited ${code}: ${err}${out}`))));
  });
}

/** settle waits for two animation frames, so that what the page scheduled is drawn. */
async function settle(page) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
}

/**
 * fitsWindow fails when the page is wider than the window, when the
 * header's user line or Sign out is cut or off screen, or when a chart
 * label is smaller than 12 px.
 */
async function fitsWindow(page, what) {
  const bad = await page.evaluate(() => {
    const out = [];
    const de = document.documentElement;
    if (de.scrollWidth > innerWidth) out.push(`the page is ${de.scrollWidth}px wide in a ${innerWidth}px window`);
    for (const sel of ["#whoami", "#account button"]) {
      const el = document.querySelector(sel);
      if (!el) continue;
      const r = el.getBoundingClientRect();
      if (r.left < 0 || r.right > innerWidth) out.push(`${sel} is off screen (${Math.round(r.left)}–${Math.round(r.right)}px)`);
      if (el.scrollWidth > el.clientWidth + 1) out.push(`${sel} is cut (${el.scrollWidth}px of text in ${el.clientWidth}px)`);
    }
    for (const el of document.querySelectorAll(".chart-label, .chart-value, .chart figcaption")) {
      const px = parseFloat(getComputedStyle(el).fontSize);
      if (px < 12) out.push(`chart text ${JSON.stringify(el.textContent.slice(0, 30))} is ${px}px`);
    }
    return out;
  });
  if (bad.length) throw new Error(`${what}: ${bad.join("; ")}`);
}

/** sizes checks the view at every width and keeps a screenshot at the phone and laptop sizes. */
async function sizes(page, name, check) {
  for (const vp of allSizes) {
    await page.setViewportSize(vp);
    await settle(page);
    const what = `${name} at ${vp.width}×${vp.height}`;
    if (check) await check(vp, what);
    await fitsWindow(page, what);
    if (shotSizes.includes(vp)) {
      await a11y(page, what);
      await page.screenshot({ path: join(outDir, `${name}-${vp.width}x${vp.height}.png`) });
    }
  }
  await page.setViewportSize(shotSizes[1]);
  await settle(page);
}

/** rowsInDom counts the task rows the page has drawn. */
const rowsInDom = (page) => page.locator("#tasks tbody tr[data-index]").count();

/** scrollTable scrolls the task table to top (a number of pixels, or "end") and waits for the rows there. */
async function scrollTable(page, top) {
  await page.evaluate((top) => {
    const s = document.querySelector("#task-scroll");
    s.scrollTop = top === "end" ? s.scrollHeight : top;
  }, top);
  await settle(page);
}

const data = await mkdtemp(join(tmpdir(), "batchd-web-scale-"));
await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
// Four local slots run the set's sleep tasks while it is watched; no cap on open sets.
let server = startServer("127.0.0.1:0", data, ["--slots", "4", "--max-open-sets", "-1"]);
let browser;
const pageErrors = [];
let failed = false;
try {
  const base = await waitReady(server);
  const token = await addUser(data, "alice");
  browser = await launch();
  const context = await browser.newContext({ viewport: shotSizes[1] });
  const page = await context.newPage();
  page.setDefaultTimeout(stepTimeout);
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  step("signed out: the sign-in box, and no 'Could not load the list.' under it");
  await page.goto(base + "/");
  await page.locator("#signin").waitFor({ state: "visible" });
  await text(page, "#set-list", () => true, "the list"); // mounted
  await page.waitForFunction(() => [...document.querySelectorAll(".side .card p.muted")].some((p) => !p.hidden && p.textContent !== "Loading…"));
  const note = await page.locator(".side .card p.muted").first().textContent();
  if (note !== "Sign in to see your task sets.") throw new Error(`under the sign-in box the list says ${JSON.stringify(note)}`);
  await sizes(page, "signin");

  step("sign in: the focus goes to the view's heading");
  await page.getByLabel("Token").fill(token);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await text(page, "#whoami", (t) => t === "Signed in as alice (user)", "the account line");
  const afterSignIn = await page.evaluate(() => document.activeElement?.id);
  if (afterSignIn !== "sets-h") throw new Error(`after sign-in the focus is on ${JSON.stringify(afterSignIn)}, want the view's heading #sets-h`);
  await page.locator("#disclose[open]").waitFor();
  await sizes(page, "sets-empty");

  step(`disclose ${TASKS.toLocaleString("en")} tasks with batchctl (DiscloseStream)`);
  // Task 0 writes a line every 0.1 s for ten minutes: its view is opened while the set runs, to measure the page following it.
  const cmds = Array.from({ length: TASKS }, (_, i) => `sleep 0.5; echo frame ${i}${failing(i) ? "; exit 3" : ""}${i === 0 ? "; for i in $(seq 6000); do echo tick $i; sleep 0.1; done" : ""}`).join("\n") + "\n";
  const file = join(data, "commands.txt");
  await writeFile(file, cmds);
  const ctl = ["--server", base, "--token", token];
  let t0 = Date.now();
  const setId = (await run(batchctl, [...ctl, "disclose", "--quiet", "--name", "e2e big", "--estimate", "1s", "--file", file])).trim();
  console.log(`e2e: disclosed ${TASKS} tasks as set ${setId} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const failingIdx = Array.from({ length: TASKS / 10_000 }, (_, k) => k * 10_000 + 7);
  await run(batchctl, [...ctl, "request", "--no-wait", "--quiet", `${setId}/${failingIdx.join(",")}`]);

  step("open the set from the list: the focus goes to its title; all its tasks load, few rows are drawn");
  // The bytes the page takes in (bodies as sent, headers included) from the click until the whole set is shown.
  const net = await context.newCDPSession(page);
  await net.send("Network.enable");
  let received = 0;
  const onData = (e) => (received += e.encodedDataLength);
  net.on("Network.dataReceived", onData);
  net.on("Network.responseReceived", (e) => (received += e.response.encodedDataLength || 0));
  await page.locator(`#set-list a[data-set="${setId}"]`).click({ timeout: stepTimeout });
  t0 = Date.now();
  await text(page, "#shown-note", (t) => t === "100,000 tasks", "the whole set loaded");
  net.off("Network.dataReceived", onData);
  await net.detach();
  console.log(`e2e: the first load of the ${TASKS.toLocaleString("en")}-task set took in ${(received / 1e6).toFixed(2)} MB`);
  if (received > MAX_FIRST_LOAD) throw new Error(`the first load of the set took in ${(received / 1e6).toFixed(2)} MB, over the ${MAX_FIRST_LOAD / 1e6} MB budget`);
  console.log(`e2e: the page loaded and drew the set in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const afterRoute = await page.evaluate(() => document.activeElement?.id);
  if (afterRoute !== "detail-h") throw new Error(`after opening the set the focus is on ${JSON.stringify(afterRoute)}, want its title #detail-h`);
  await text(page, "#live-status", (t) => t === "Live", "the stream is live");
  let drawn = await rowsInDom(page);
  if (drawn === 0 || drawn > 200) throw new Error(`${drawn} task rows in the DOM for a set of ${TASKS}, want only the rows in view`);
  await text(page, 'tr[data-index="12"] td.cmd', (t) => t === "12", "the command column shows the varying part");
  await text(page, "#cmd-note", (t) => t.includes("sleep 0.5; echo frame …"), "what every command shares");
  await text(page, "#new-set", (t) => t === "+ New set", "the way to the form");
  if ((await page.locator("#disclose").count()) !== 0) throw new Error("the disclose form is drawn beside an open set");
  const listTop = await page.locator("#set-list").evaluate((el) => el.getBoundingClientRect().top);
  if (listTop > 800 - 80) throw new Error(`the set list starts at ${listTop}px, below the fold of 800px`);
  await sizes(page, "set", async (vp, what) => {
    const bar = await page.locator("#state-bar .seg").count();
    if (bar === 0) throw new Error(`${what}: no stacked bar of states`);
  });

  step("filter by text: one task of 100,000");
  await page.locator("#f-text").fill("frame 99999");
  await text(page, "#shown-note", (t) => t === "Showing 1 of 100,000 tasks", "the text filter");
  await text(page, "#tasks tbody", (t) => t.startsWith("99999"), "the one row");
  await sizes(page, "set-filtered");
  await page.locator("#f-text").fill("");
  await page.locator("#f-text").press("Enter");
  await text(page, "#shown-note", (t) => t === "100,000 tasks", "the filter cleared");

  step("filter by state: the failed tasks (requested tasks that exit 3)");
  await text(page, '[data-count="failed"]', (t, n) => t === `${n} failed`, "every failing task finished and failed", failingIdx.length);
  await page.locator("#f-state").selectOption("failed");
  await text(page, "#shown-note", (t, n) => t === `Showing ${n} of 100,000 tasks`, "the state filter", failingIdx.length);
  const failedRows = await page.locator("#tasks tbody tr[data-index]").evaluateAll((rows) => rows.map((r) => [r.dataset.index, r.querySelector(".badge.state-failed")?.textContent.trim()]));
  if (JSON.stringify(failedRows) !== JSON.stringify(failingIdx.map((i) => [String(i), "failed"]))) throw new Error(`failed rows: ${JSON.stringify(failedRows)}`);
  await page.locator("#f-state").selectOption("all");
  await text(page, "#shown-note", (t) => t === "100,000 tasks", "all tasks again");

  step("sort: last to first, and back");
  await page.locator("#f-sort").selectOption("index-desc");
  await text(page, "#tasks tbody tr[data-index]", (t) => t.startsWith("99999"), "the last task first");
  await page.locator("#f-sort").selectOption("index");
  await text(page, "#tasks tbody tr[data-index]", (t) => t.startsWith("0"), "the first task first again");

  step("scroll to the end of the table");
  await scrollTable(page, "end");
  await page.locator('#tasks tr[data-index="99999"]').waitFor();
  await text(page, 'tr[data-index="99999"] td.cmd', (t) => t === "99999", "the last task's command");
  drawn = await rowsInDom(page);
  if (drawn > 200) throw new Error(`${drawn} task rows in the DOM at the end of the table`);
  const fitsInside = await page.evaluate(() => {
    const s = document.querySelector("#task-scroll");
    const last = document.querySelector('#tasks tr[data-index="99999"]').getBoundingClientRect();
    return last.bottom <= s.getBoundingClientRect().bottom + 1;
  });
  if (!fitsInside) throw new Error("the last row is not in view at the end of the table");
  await page.screenshot({ path: join(outDir, "set-end-1280x800.png") });

  step("jump to a running task and to a failed one");
  await scrollTable(page, 0);
  // A task runs for half a second: read the row in the same turn as the click, before the stream moves on.
  const run1 = await page.evaluate(() => {
    document.querySelector("#next-running").click();
    const tr = document.activeElement?.closest("tr[data-index]");
    return tr && { index: tr.dataset.index, copies: tr.querySelector('[data-col="copies"]').textContent, jumped: tr.classList.contains("jumped") };
  });
  if (!run1 || !/running/.test(run1.copies) || !run1.jumped) throw new Error(`"Next running" landed on ${JSON.stringify(run1)}`);
  await page.locator("#next-failed").click();
  await page.locator("#next-failed").click();
  const fail2 = await page.evaluate(() => document.activeElement?.closest("tr[data-index]")?.dataset.index);
  // From the running task, the second failed task after it (wrapping round at the end).
  const after = failingIdx.filter((i) => i > Number(run1.index)).concat(failingIdx.filter((i) => i <= Number(run1.index)));
  if (fail2 !== String(after[1])) throw new Error(`"Next failed" twice from task ${run1.index} landed on task ${fail2}, want ${after[1]}`);
  await page.screenshot({ path: join(outDir, "set-jump-1280x800.png") });

  step(`main-thread time while the set runs: ${WINDOW_S} s after ${SETTLE_S} s to settle, budget ${BUDGET * 100}%`);
  await scrollTable(page, 0);
  await page.locator("#detail-h").focus();
  await page.waitForTimeout(SETTLE_S * 1000);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  const metrics = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));
  const ran = () => page.evaluate(() => document.querySelector('[data-count="executed"]')?.textContent ?? "");
  const ranBefore = await ran();
  // E2E_TRACE=FILE keeps a Chrome trace of the window (open it in the Performance panel) to see where the time went.
  if (process.env.E2E_TRACE) await browser.startTracing(page, { path: process.env.E2E_TRACE, categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "v8", "blink.user_timing"] });
  const m0 = await metrics();
  await page.waitForTimeout(WINDOW_S * 1000);
  const m1 = await metrics();
  if (process.env.E2E_TRACE) await browser.stopTracing();
  const ranAfter = await ran();
  const d = (k) => m1[k] - m0[k];
  const window = d("Timestamp");
  // The gate is the main thread's CPU time (ThreadTime): TaskDuration is
  // the wall time of its tasks, which on a machine loaded past its cores
  // also counts the time the thread waited for one (an idle page showed
  // 5% TaskDuration on 1% CPU at load 10). E2E_PERF_METRIC=TaskDuration
  // gates on it instead, on a quiet machine.
  const metric = process.env.E2E_PERF_METRIC || "ThreadTime";
  const share = d(metric) / window;
  console.log(
    `e2e: main thread: ${d("ThreadTime").toFixed(3)} s CPU (${((d("ThreadTime") / window) * 100).toFixed(2)}%) and ${d("TaskDuration").toFixed(3)} s in tasks (TaskDuration, ${((d("TaskDuration") / window) * 100).toFixed(2)}%) of ${window.toFixed(1)} s ` +
      `(script ${d("ScriptDuration").toFixed(3)} s, layout ${d("LayoutDuration").toFixed(3)} s in ${d("LayoutCount")} layouts, ` +
      `style ${d("RecalcStyleDuration").toFixed(3)} s, JS heap ${(m1.JSHeapUsedSize / 2 ** 20).toFixed(0)} MiB); ` +
      `tasks run while disclosed: ${ranBefore} → ${ranAfter}`,
  );
  if (ranBefore === ranAfter) throw new Error(`no task ran during the window (${ranBefore}): the measurement saw no updates`);
  if (share > BUDGET) throw new Error(`the page kept its main thread busy ${(share * 100).toFixed(1)}% of the time (${metric}) while the set ran, over the ${BUDGET * 100}% budget`);

  step(`main-thread time with task 0's view open and its output streaming: ${WINDOW_S} s, budget ${TASK_VIEW_BUDGET * 100}%`);
  // Only a requested task's output can be followed: task 0 runs (as free work) until it is requested.
  await run(batchctl, [...ctl, "request", "--no-wait", "--quiet", `${setId}/0`]);
  await page.evaluate((id) => (location.hash = `#/sets/${id}/tasks/0`), setId);
  await page.locator("#task-view").waitFor({ state: "visible" });
  await text(page, "#tv-stdout", (t) => /tick \d+/.test(t), "task 0's output streams into its view");
  await page.waitForTimeout(5000);
  const lines = () => page.evaluate(() => [...document.querySelectorAll("#tv-stdout .line")].pop()?.dataset.line ?? "");
  const linesBefore = await lines();
  const v0 = await metrics();
  await page.waitForTimeout(WINDOW_S * 1000);
  const v1 = await metrics();
  const linesAfter = await lines();
  const dv = (k) => v1[k] - v0[k];
  const vshare = dv("ThreadTime") / dv("Timestamp");
  console.log(
    `e2e: task view streaming: main thread ${dv("ThreadTime").toFixed(3)} s CPU (${(vshare * 100).toFixed(2)}%) of ${dv("Timestamp").toFixed(1)} s, ` +
      `TaskDuration ${((dv("TaskDuration") / dv("Timestamp")) * 100).toFixed(2)}%; output lines ${linesBefore} → ${linesAfter}`,
  );
  await cdp.detach();
  if (linesBefore === linesAfter) throw new Error(`task 0's view drew no new line in the window (${linesBefore}): nothing streamed`);
  if (vshare > TASK_VIEW_BUDGET) throw new Error(`with the task view streaming the main thread was busy ${(vshare * 100).toFixed(1)}% of the time, over the ${TASK_VIEW_BUDGET * 100}% budget`);
  await page.keyboard.press("Escape");
  await page.locator("#task-view").waitFor({ state: "hidden" });

  step("cancel the rest asks first, with the count");
  await page.locator("#cancel-rest").click();
  await page.locator("#confirm-cancel[open]").waitFor();
  await text(page, "#confirm-h", (t) => /^Cancel [\d,]+ unrequested tasks\?$/.test(t) && Number(t.replace(/\D/g, "")) > 90_000, "the count in the question");
  await sizes(page, "confirm-cancel");
  await page.getByRole("button", { name: "Keep them" }).click();
  await page.locator("#confirm-cancel").waitFor({ state: "hidden" });

  step("the bill and the cluster");
  await page.getByRole("link", { name: "Bill" }).click();
  await text(page, '#bill-totals [data-total="lines"] td', (t, n) => t === String(n), "the failed tasks are billed", failingIdx.length);
  await sizes(page, "bill");
  await page.getByRole("link", { name: "Cluster" }).click();
  await text(page, '[data-stat="slots"] .stat-value', (t) => / \/ 4$/.test(t), "four slots");
  await sizes(page, "cluster");

  step("a set that does not exist: its actions stay disabled");
  await page.goto(`${base}/#/sets/999999`);
  await text(page, "#live-status", (t) => t.startsWith("Stopped"), "the watch stopped");
  await text(page, "#tasks tbody", (t) => t === "The set could not be loaded: see the message above.", "the table says so");
  for (const id of ["request-all", "cancel-rest", "next-running", "next-failed"]) {
    if ((await page.locator(`#${id}`).getAttribute("aria-disabled")) !== "true") throw new Error(`#${id} is enabled on a set that did not load`);
  }
  const ghosts = await page.locator("#state-bar:visible, #set-detail .counts li:visible").count();
  if (ghosts > 0) throw new Error(`${ghosts} empty count badges or bar shown for a set that did not load`);
  await sizes(page, "not-found");

  if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n${pageErrors.join("\n")}`);
  console.log(`e2e: scale ok (screenshots in ${outDir})`);
} catch (e) {
  failed = true;
  console.error(`e2e: FAILED: ${e?.stack || e}`);
  if (pageErrors.length) console.error(`page errors:\n${pageErrors.join("\n")}`);
  await writeFile(join(outDir, "batchd.log"), serverLog()).catch(() => {});
  console.error(`--- batchd log (tail) ---\n${serverLog().slice(-4000)}`);
  try {
    const pages = browser?.contexts()[0]?.pages() ?? [];
    if (pages[0]) await pages[0].screenshot({ path: join(outDir, "failure.png") });
  } catch {}
} finally {
  await browser?.close().catch(() => {});
  await stop(server);
  await rm(data, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
