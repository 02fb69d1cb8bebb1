// End-to-end test of a task's own view and of the table's cells, in a real
// Chromium against a real batchd with two slots, at 1280×800 and 390×844:
//
//   BATCHD_BIN=/path/to/batchd node e2e/task.mjs
//
//   - no cell of the table clips its text, except where an ellipsis shows
//     it is cut and the whole value is one click away (the command opens
//     the task's view; a wait reason opens the why panel);
//   - a failed task has a red "failed" badge and is not counted as finished;
//   - the index link opens #/sets/N/tasks/I: the view is in the viewport and
//     has the focus; it shows the command as given, the environment, the
//     attempts and copies, and the output while the task still runs;
//   - an output line's anchor is shared by the address and marks the line
//     after a reload; Escape closes the view and gives the focus back;
//   - Output puts the output in view and moves the focus there;
//   - Request all asks first with the count and the slot-seconds the
//     estimates imply; Cancel leaves every task unrequested;
//   - the filter is kept in the address; a number finds that index only;
//     row buttons are named after their task; "Signed in as" fades.
//
// Screenshots of the views go to docs/screenshots/web/ (SHOTS=0 skips them).
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { a11y, launch, needBin, serverLog, startServer, step, stepTimeout, stop, text, waitReady } from "./lib.mjs";

const shotDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "docs", "screenshots", "web");
const shots = process.env.SHOTS !== "0";
needBin();
const data = await mkdtemp(join(tmpdir(), "batchd-web-task-"));
const server = startServer("127.0.0.1:0", data, ["--slots", "2"]);
let browser;
let failed = false;
const pageErrors = [];

/** call makes one Connect JSON call to the server. */
async function call(base, token, method, body) {
  const r = await fetch(`${base}/batch.v1.TaskSetService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${method}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** clipped lists the table cells whose text is cut where the cut is not shown by an ellipsis with the whole value one click away. */
function clipped(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const td of document.querySelectorAll("#tasks tbody tr[data-index] td")) {
      const col = td.dataset.col || (td.classList.contains("cmd") ? "cmd" : td.classList.contains("actions") ? "actions" : "index");
      const row = td.closest("tr").dataset.index;
      for (const el of [td, ...td.querySelectorAll("*")]) {
        if (el.getClientRects().length === 0) continue;
        const over = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight + 2; // one pixel over is enough for an ellipsis to hide a control
        if (!over || el.clientWidth === 0) continue;
        const cs = getComputedStyle(el);
        const ellipsis = cs.textOverflow === "ellipsis" || cs.webkitLineClamp !== "none";
        // The whole value one click away: the command links to the task's view, a wait reason opens the why panel.
        const oneClick = (col === "cmd" && el.closest("a[href*='/tasks/']")) || el.closest("button.why");
        const clipping = cs.overflowX !== "visible" || cs.overflowY !== "visible";
        if (!clipping) continue;
        if (ellipsis && oneClick) continue;
        bad.push(`task ${row} ${col}: ${JSON.stringify(el.textContent.trim().slice(0, 40))} (${el.scrollWidth}×${el.scrollHeight} in ${el.clientWidth}×${el.clientHeight})`);
      }
    }
    return bad;
  });
}

/** inViewport says whether the element's box lies within the window (its top at least, and most of it). */
function inViewport(page, sel) {
  return page.locator(sel).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.top >= 0 && r.left >= -1 && r.right <= innerWidth + 1 && r.top < innerHeight - 40;
  });
}

try {
  const base = await waitReady(server);
  const token = (await readFile(join(data, "admin.token"), "utf8")).trim();
  const long = `echo ${"a-long-argument-".repeat(8)}done`;
  const disclosed = await call(base, token, "Disclose", {
    name: "e2e task view",
    tasks: [
      { argv: ["sh", "-c", "for i in 1 2 3; do echo line-$i; done; echo to-stderr >&2; while sleep 1; do echo tick; done"], env: { STAGE: "render", FRAME: "0" }, dir: "/tmp", estimateSeconds: 600 },
      { argv: ["sh", "-c", "echo bad; exit 3"], estimateSeconds: 1 },
      { argv: ["sh", "-c", long], estimateSeconds: 2 },
      { argv: ["sh", "-c", "sleep 400 # 11"], estimateSeconds: 400 },
      { argv: ["sh", "-c", "sleep 500 # 12"], estimateSeconds: 500 },
    ],
  });
  const set = disclosed.setId ?? disclosed.set_id ?? disclosed.taskSet?.id;
  if (!set) throw new Error(`disclose answered ${JSON.stringify(disclosed).slice(0, 200)}`);
  await call(base, token, "Request", { setId: set, indexes: [0, 1] });
  // Task 1 fails; retried in place, it fails again as attempt 2 (its state cell carries the attempt mark too).
  for (;;) {
    const g = await call(base, token, "GetTask", { setId: set, index: 1 });
    if (g.task?.state === "TASK_STATE_FINISHED") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await call(base, token, "Retry", { setId: set, indexes: [1] });
  // Task 4, canceled and retried, waits as "disclosed ↻2": the widest state cell.
  await call(base, token, "Cancel", { setId: set, indexes: [4] });
  await call(base, token, "Retry", { setId: set, indexes: [4] });
  // An array set: one command, the value varies; the table shows the value and says the command once.
  const arr = await call(base, token, "Disclose", {
    name: "e2e array frames",
    array: { first: 1000, last: 1039, spec: { argv: ["sh", "-c", 'render --scene city --quality high --frame "$BATCH_ARRAY_VALUE" --out /scratch/frames'], estimateSeconds: 30 } },
  });
  const arrSet = arr.taskSet?.id;

  browser = await launch();
  for (const [w, hgt] of [
    [1280, 800],
    [390, 844],
  ]) {
    const size = `${w}x${hgt}`;
    const page = await (await browser.newContext({ viewport: { width: w, height: hgt } })).newPage();
    page.setDefaultTimeout(stepTimeout);
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    const shot = async (name) => {
      if (shots) await page.screenshot({ path: join(shotDir, `${name}-${size}.png`) });
    };
    await page.goto(`${base}/#/sets/${set}`);
    await page.getByLabel("Token").fill(token);
    await page.keyboard.press("Enter");
    await page.locator("#signin").waitFor({ state: "hidden" });
    await text(page, "#live-status", (t) => t.startsWith("Live"), `${size}: the set is live`);

    step(`${size}: a failed task has its own red badge and is not counted as finished`);
    await text(page, 'tr[data-index="1"] [data-col="state"]', (t) => /^failed\s*↻2$/.test(t), `${size}: task 1's badge, and its second attempt`);
    const bg = await page.locator('tr[data-index="1"] [data-col="state"] .badge').evaluate((el) => getComputedStyle(el).backgroundColor);
    if (bg !== "rgb(207, 34, 46)") throw new Error(`${size}: the failed badge is ${bg}, want red`);
    await text(page, '[data-count="failed"]', (t) => t === "1 failed", `${size}: one failed`);
    await text(page, '[data-count="finished"]', (t) => /^\d+ finished$/.test(t), `${size}: the finished count`);
    const fin = await page.locator('[data-count="finished"]').textContent();
    const finishedRows = await page.locator('#tasks tr[data-state="finished"]').count();
    if (fin !== `${finishedRows} finished`) {
      const st = await call(base, token, "GetTaskSet", { setId: set });
      throw new Error(`${size}: the header says ${JSON.stringify(fin)} with ${finishedRows} finished rows (failed ones counted as finished?): ${JSON.stringify(st).slice(0, 1500)}`);
    }

    step(`${size}: no cell clips its text unless an ellipsis shows it and the whole value is one click away`);
    await text(page, 'tr[data-index="4"] [data-col="state"]', (t) => /^disclosed\s*↻2$/.test(t), `${size}: task 4 waits again as attempt 2`);
    await text(page, 'tr[data-index="0"] [data-col="copies"]', (t) => /running/.test(t), `${size}: task 0 runs`);
    const bad = await clipped(page);
    if (bad.length) throw new Error(`${size}: cells clip their text:\n  ${bad.join("\n  ")}`);
    await shot("task-table");

    step(`${size}: row buttons are named after their task`);
    const names = await page.locator("#tasks tbody button[data-action]:not(.why):not(.attempt-mark)").evaluateAll((bs) => bs.map((b) => b.getAttribute("aria-label")));
    const unnamed = names.filter((n) => !/ task \d+$/.test(n ?? ""));
    if (names.length === 0 || unnamed.length) throw new Error(`${size}: row buttons without their task: ${JSON.stringify(names)}`);

    step(`${size}: the index link opens the task's view, in view and focused, with its live output`);
    await page.locator('tr[data-index="0"] a[data-action="open"]').click();
    await page.waitForURL((u) => u.hash === `#/sets/${set}/tasks/0`);
    await page.locator("#task-view").waitFor({ state: "visible" });
    if (!(await inViewport(page, "#task-view"))) throw new Error(`${size}: the task view is not in the viewport`);
    const focused = await page.evaluate(() => document.activeElement?.id);
    if (focused !== "tv-h") throw new Error(`${size}: the focus is on ${JSON.stringify(focused)}, want the task view's heading`);
    await text(page, "#tv-argv", (t) => t.startsWith("sh -c 'for i in 1 2 3; do echo line-$i"), `${size}: the command as given`);
    const lineAt = w === 1280 ? 2 : 0;
    await text(page, "#tv-env", (t) => t.includes("FRAME") && t.includes("render"), `${size}: the environment`);
    await text(page, "#tv-dir", (t) => t === "/tmp", `${size}: the working directory`);
    // A later follower (the second page) sees the lines written from then on: the task prints a tick a second.
    await text(page, "#tv-stdout", (t, first) => (first ? t.includes("line-1") && t.includes("line-3") : t.includes("tick")), `${size}: the live output`, w === 1280).catch(async (e) => {
      throw new Error(`${e.message}; the stream says ${JSON.stringify(await page.locator("#tv-follow").textContent())}, ${JSON.stringify(await page.locator("#task-view .tv-timeline").textContent())}`);
    });
    if (w === 1280) await text(page, "#tv-stderr", (t) => t.includes("to-stderr"), `${size}: stderr`);
    await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t === "requested", `${size}: task 0 still runs while its output shows`);
    await text(page, "#task-view .tv-span.current", (t) => /copy #\d+ on \S+ started/.test(t) && /requested \(queued\)/.test(t), `${size}: the timeline`);
    if (w === 390) {
      const vw = await page.locator("#task-view").evaluate((el) => el.getBoundingClientRect().width);
      if (vw < 380) throw new Error(`${size}: the task view is ${vw}px wide on a phone, want the whole screen`);
    }
    await shot("task-view");

    step(`${size}: a line's anchor goes into the address and marks the line after a reload`);
    const ln = lineAt || Number(await page.locator("#tv-stdout .line").first().getAttribute("data-line"));
    await page.locator(`#tv-L${ln} a.ln`).click();
    await page.waitForURL((u) => u.hash === `#/sets/${set}/tasks/0/L${ln}`);
    await page.locator(`#tv-L${ln}.marked`).waitFor();
    // A shared link to a line of a finished task's output, opened afresh.
    await page.goto(`${base}/#/sets/${set}/tasks/1/L1`);
    await page.reload();
    await page.locator("#task-view").waitFor({ state: "visible" });
    await page.locator("#tv-L1.marked").waitFor({ timeout: 30000 }).catch(async () => {
      throw new Error(`${size}: line 1 is not marked after opening its link: ${(await page.locator("#task-view").innerHTML()).slice(0, 2000)}`);
    });
    await text(page, "#tv-state", (t) => t === "failed", `${size}: the view's badge says failed`);
    await text(page, "#tv-exit", (t) => t === "3", `${size}: the exit code`);
    if (!(await inViewport(page, "#task-view"))) throw new Error(`${size}: after a reload the task view is not in the viewport`);

    step(`${size}: Escape closes the view and gives the focus back to the row`);
    await page.locator("#tv-h").focus();
    await page.keyboard.press("Escape");
    await page.locator("#task-view").waitFor({ state: "hidden" });
    await page.waitForURL((u) => u.hash === `#/sets/${set}`);
    const back = await page.evaluate(() => [document.activeElement?.closest("tr")?.dataset.index, document.activeElement?.dataset.action]);
    if (back[0] !== "1" || back[1] !== "open") throw new Error(`${size}: after Escape the focus is on ${JSON.stringify(back)}, want task 1's link`);

    step(`${size}: Output puts the output in view and focuses it`);
    await page.locator('tr[data-index="1"] [data-action="output"]').click();
    await text(page, "#out-stdout", (t) => t === "bad", `${size}: task 1's output`);
    if (!(await inViewport(page, "#output-h"))) throw new Error(`${size}: the output is not in the viewport after Output`);
    const ofocus = await page.evaluate(() => document.activeElement?.id);
    if (ofocus !== "output-h") throw new Error(`${size}: after Output the focus is on ${JSON.stringify(ofocus)}`);

    if (w === 1280) {
      step(`${size}: an unrequested task's view says its output is not followed yet, and follows it once it is requested`);
      await page.locator('tr[data-index="2"] a[data-action="open"]').click();
      await text(page, "#tv-follow", (t) => t.startsWith("Not followed yet:"), "the view of an executed, unrequested task");
      await call(base, token, "Request", { setId: set, indexes: [2] });
      await text(page, "#tv-stdout", (t) => t.includes("a-long-argument-a-long-argument"), "its output once requested");
      await text(page, "#tv-follow", (t) => t.startsWith("The task is finished, exit 0"), "the end of its output");
      await page.keyboard.press("Escape");
      await page.locator("#task-view").waitFor({ state: "hidden" });

      step(`${size}: Request all asks first, with the count and the slot-seconds; Cancel requests nothing`);
      await page.locator("#request-all").click();
      await page.locator("#confirm-request").waitFor({ state: "visible" });
      await text(page, "#request-h", (t) => t === "Request 2 tasks?", "the count");
      await text(page, "#request-cost", (t) => /^The estimates imply (about|at least) [\d,]+\u00a0slot-seconds billed/.test(t), "the bill the estimates imply");
      await shot("task-request-all");
      await page.locator("#request-no").click();
      await page.locator("#confirm-request").waitFor({ state: "hidden" });
      const after = await call(base, token, "GetTaskSet", { setId: set });
      const counts = after.taskSet?.counts ?? {};
      if (Number(counts.requested ?? 0) + Number(counts.finished ?? 0) !== 3) throw new Error(`Cancel requested tasks: ${JSON.stringify(counts)}`);
    }

    step(`${size}: the filter is kept in the address; a number finds that index only`);
    await page.locator("#f-state").selectOption("failed");
    await page.waitForURL((u) => u.hash === `#/sets/${set}?state=failed`);
    await page.reload();
    await text(page, "#live-status", (t) => t.startsWith("Live"), `${size}: live again`);
    if ((await page.locator("#f-state").inputValue()) !== "failed") throw new Error(`${size}: the filter did not come back from the address`);
    await page.locator("#f-state").selectOption("all");
    await page.locator("#f-text").fill("1");
    await page.keyboard.press("Enter");
    await text(page, "#shown-note", (t) => t === "Showing 1 of 5 tasks", `${size}: "1" finds task 1 alone, not the 1s inside commands`);
    await page.locator("#f-text").fill("sleep");
    await page.keyboard.press("Enter");
    await text(page, "#shown-note", (t) => t === "Showing 3 of 5 tasks", `${size}: text finds commands`);

    step(`${size}: an array set shows each task's value, the one command said once above the table`);
    await page.goto(`${base}/#/sets/${arrSet}`);
    await text(page, "#live-status", (t) => t.startsWith("Live"), `${size}: the array set is live`);
    await text(page, 'tr[data-index="3"] td.cmd', (t) => t === "1003", `${size}: task 3's value`);
    await text(page, "#cmd-note", (t) => t.startsWith("Every command reads render --scene city") && t.endsWith("shows what differs: BATCH_ARRAY_VALUE."), `${size}: the one command`);
    const badArr = await clipped(page);
    if (badArr.length) throw new Error(`${size}: cells of the array set clip their text:\n  ${badArr.join("\n  ")}`);
    await shot("task-array");

    step(`${size}: "Signed in as" fades, the name stays`);
    await page.waitForFunction(() => document.querySelector(".who-lead.faded"), null, { timeout: stepTimeout });
    await text(page, "#whoami", (t) => t.endsWith("admin (admin)") || /admin/.test(t), `${size}: the name stays`);
    await page.close();
  }
  for (const [w, hgt] of [
    [1280, 800],
    [390, 844],
  ]) {
    step(`${w}x${hgt}, dark: the table and the task view keep AA contrast`);
    const page = await (await browser.newContext({ viewport: { width: w, height: hgt }, colorScheme: "dark" })).newPage();
    page.setDefaultTimeout(stepTimeout);
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.goto(`${base}/#/sets/${set}`);
    await page.getByLabel("Token").fill(token);
    await page.keyboard.press("Enter");
    await page.locator("#signin").waitFor({ state: "hidden" });
    await text(page, "#live-status", (t) => t.startsWith("Live"), "the set is live");
    await a11y(page, `${w}x${hgt} dark table`);
    if (shots) await page.screenshot({ path: join(shotDir, `task-table-dark-${w}x${hgt}.png`) });
    await page.locator('tr[data-index="1"] a[data-action="open"]').click();
    await text(page, "#tv-stdout", (t) => t.includes("bad"), "task 1's output");
    await a11y(page, `${w}x${hgt} dark task view`);
    if (shots) await page.screenshot({ path: join(shotDir, `task-view-dark-${w}x${hgt}.png`) });
    await page.close();
  }
  if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n${pageErrors.join("\n")}`);
  console.log("e2e task: ok");
} catch (e) {
  failed = true;
  console.error(`e2e task: FAILED: ${e?.stack || e}`);
  console.error(`--- batchd log (tail) ---\n${serverLog().slice(-3000)}`);
} finally {
  await browser?.close().catch(() => {});
  await stop(server);
  await rm(data, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
