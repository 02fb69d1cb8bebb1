// End-to-end test of the page's array disclose and its "why is it waiting"
// display, in a real Chromium against a real batchd with one slot:
//
//   BATCHD_BIN=/path/to/batchd node e2e/arrays.mjs
//
//   - a reversed range is refused on the range field;
//   - an array 2-12:2 under bash, requested at once, makes six tasks; each
//     prints its place in the set and its value, and bash's $RANDOM is set;
//   - while one long task holds the only slot, the waiting tasks in view say
//     why they wait and when they should start, as the server's Why answers.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { count, launch, needBin, openForm, serverLog, startServer, step, stepTimeout, stop, text, waitReady } from "./lib.mjs";

needBin();
const data = await mkdtemp(join(tmpdir(), "batchd-web-arrays-"));
const server = startServer("127.0.0.1:0", data, ["--slots", "1"]);
let browser;
let failed = false;
const pageErrors = [];
try {
  const base = await waitReady(server);
  const token = (await readFile(join(data, "admin.token"), "utf8")).trim();
  browser = await launch();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.setDefaultTimeout(stepTimeout);
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(base + "/");
  await page.getByLabel("Token").fill(token);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await openForm(page);

  step("array mode: a reversed range is refused on the range field");
  await page.getByLabel("Tasks", { exact: true }).selectOption("array");
  await page.getByLabel(/^Range of values/).waitFor();
  await page.getByLabel(/^Range of values/).fill("12-2");
  await page.getByLabel("Command each task runs").fill("echo x");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#f-array-err", (t) => /reversed/.test(t), "the range field's error");

  step("disclose an array 2-12:2 under bash, requested at once");
  await page.getByLabel("Name").fill("e2e array");
  await page.getByLabel(/^Range of values/).fill("2-12:2");
  await page.getByLabel("Shell").selectOption("bash");
  await page
    .getByLabel("Command each task runs")
    .fill('echo "i=$BATCH_TASK_INDEX v=$BATCH_ARRAY_VALUE r=${RANDOM:+set}"; [ "$BATCH_TASK_INDEX" = 0 ] || sleep 300');
  await page.getByLabel(/Estimated run time/).fill("5m");
  await page.getByLabel(/Request them all now/).check();
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await page.waitForURL(/#\/sets\/\d+$/);
  const set = page.url().replace(/.*#\/sets\//, "");
  await text(page, "#notice", (t, id) => t.startsWith(`Disclosed 6 tasks as set #${id}.`), "six tasks disclosed", set);
  await count(page, "#tasks tbody tr[data-index]", 6, "six task rows");
  await text(page, 'tr[data-index="3"] td.cmd', (t) => t === "8", "task 3's command column shows its value");
  await text(page, "#cmd-note", (t) => t.startsWith("Every command reads bash -c") && t.endsWith("shows what differs: BATCH_ARRAY_VALUE."), "the one command, said once above the table");

  step("task 0 finishes; its output has its index, its value and bash's $RANDOM");
  await page.locator('tr[data-index="0"] [data-action="output"]').click();
  await text(page, "#out-stdout", (t) => t.trim() === "i=0 v=2 r=set", "task 0's output");

  step("the waiting tasks say why they wait and when they should start");
  // Task 1 holds the only slot for 300 s; tasks 2-5 wait behind it.
  await text(page, 'tr[data-index="1"] [data-col="copies"]', (t) => /running/.test(t), "task 1 runs");
  for (const i of [2, 5]) {
    await text(page, `tr[data-index="${i}"] [data-col="progress"] .why`, (t) => /^starts ~\S+/.test(t) && /slot/.test(t), `task ${i}'s reason and start estimate`);
  }
  const title = await page.locator('tr[data-index="5"] .why').getAttribute("title");
  if (!/Class: requested/.test(title) || !/Assuming/.test(title)) throw new Error(`task 5's why tooltip: ${JSON.stringify(title)}`);

  step("the why of task 5 opens in full below the table");
  await page.locator('tr[data-index="5"] .why').click();
  await text(page, "#why-h", (t) => t === "Why task 5 waits", "the why panel's title");
  await text(page, "#why-class", (t) => t === "requested", "its class");
  await text(page, "#why-reason", (t) => /slot/.test(t), "its reason");
  await text(page, "#why-position", (t) => t === "3", "its place among the set's waiting tasks (2, 3 and 4 go first)");
  await text(page, "#why-start", (t) => /^~\S/.test(t), "its start estimate");
  await text(page, "#why-assumptions", (t) => t.startsWith("The estimate assumes "), "the estimate's assumptions");
  await page.locator("#why").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(import.meta.dirname, "out", "array-why.png") });

  step("once task 5 no longer waits, the panel says so");
  await page.locator('tr[data-index="5"] [data-action="cancel"]').click();
  await text(page, "#why-state", (t) => /is not waiting: it is canceled/.test(t), "the panel follows the task");

  if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n${pageErrors.join("\n")}`);
  console.log("e2e arrays: ok");
} catch (e) {
  failed = true;
  console.error(`e2e arrays: FAILED: ${e?.stack || e}`);
  console.error(`--- batchd log (tail) ---\n${serverLog().slice(-4000)}`);
} finally {
  await browser?.close().catch(() => {});
  await stop(server);
  await rm(data, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
