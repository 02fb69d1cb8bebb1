// End-to-end test of the page in a real Chromium against a real batchd.
//
//   BATCHD_BIN=/path/to/batchd npm run e2e
//
// Starts `batchd serve` on a loopback port it picks itself with a temporary data
// directory, two slots and a cap of two open task sets per user, adds a
// plain user with `batchd user add`, then drives the page with clicks,
// typing and the keyboard, asserting only on what the page shows:
//
//   - sign in: a wrong token is refused with a message; the user's token works;
//   - keyboard: Tab reaches every main control in order, each with a visible
//     focus outline; a request is made with the keyboard;
//   - disclose three tasks, request one and read (and download) its output
//     and the file it kept;
//   - the cluster while work runs: busy slots, the disclosed queue, copies;
//   - a server error: a third open set is refused by the cap, the message
//     says why, the form keeps what was typed; after canceling the rest of
//     the first set, the same form goes through;
//   - a speculative copy is marked as such;
//   - kill -9 and restart of batchd: the page says the stream dropped, then
//     that it reconnected by itself, and shows the same states;
//   - the bill: exactly one billed task, and its chart;
//   - retry the canceled tasks in place (with a count confirmation), see a
//     task's attempts in its detail, and cancel them again;
//   - sign out, sign in as the admin, and read the cluster;
//   - every view fits 1280×800, its text meets WCAG AA contrast, its inputs
//     have labels and its controls have names.
//
// Screenshots go to web/e2e/out/.
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { a11y, addUser, count, fits, launch, stepTimeout, needBin, openForm, serverLog, startServer, step, stop, tabTour, text, waitReady } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "out");
needBin();
let base = "";
const data = await mkdtemp(join(tmpdir(), "batchd-web-e2e-"));
// Clear this test's own files, not the other tests' folders (scale.mjs writes out/scale/).
await mkdir(outDir, { recursive: true });
for (const f of await readdir(outDir, { withFileTypes: true })) if (f.isFile()) await rm(join(outDir, f.name));
let server = startServer("127.0.0.1:0", data);
let browser;
const pageErrors = [];
let failed = false;
try {
  base = await waitReady(server);
  const userToken = await addUser(data, "alice");
  const adminToken = (await readFile(join(data, "admin.token"), "utf8")).trim();
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(stepTimeout);
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: join(outDir, `${name}.png`) });
  const openSet = async (id, name) => {
    await page.locator(`#set-list a[data-set="${id}"]`).click();
    await text(page, "#detail-h", (t, name) => t.startsWith(name), `the view of set ${id}`, name);
    await text(page, "#live-status", (t) => t.startsWith("Live"), `the stream of set ${id} is live`);
  };

  step("open the page");
  await page.goto(base + "/");
  step("sign in: the server asks for a token; a wrong one is refused with a message, the user's works");
  await page.locator("#signin").waitFor({ state: "visible" });
  await text(page, "#alerts", (t) => t === "", "no error on top of the sign-in box");
  const firstFocus = await page.evaluate(() => document.activeElement?.id);
  if (firstFocus !== "token") throw new Error(`the focus is on ${JSON.stringify(firstFocus)}, want the token field`);
  const auth = [];
  page.on("request", (r) => {
    if (r.url().includes("/batch.v1.")) auth.push(r.headers()["authorization"] ?? null);
  });
  await page.getByLabel("Token").fill("bd_wrongwrongwrongwrongwrongwrong00");
  await page.keyboard.press("Enter");
  await text(page, "#alerts .problem-title", (t) => t === "Signing in: the server refused this token.", "the refusal of a wrong token");
  await text(page, "#alerts .problem-detail", (t) => t.startsWith("The server said: "), "the server's reason");
  if (await page.locator("#signin").isHidden()) throw new Error("the token field went away after a refused token");
  if ((await page.locator("#token").getAttribute("aria-invalid")) !== "true") throw new Error("the refused token field is not marked invalid");
  await text(page, "#account", (t) => !t.includes("Signed in"), "no claim to be signed in with a refused token");
  await text(page, "#notice", (t) => t === "", "no success notice for a refused token");
  await a11y(page, "sign-in");
  await shot("signin");
  await page.getByLabel("Token").fill(userToken);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await text(page, "#whoami", (t) => t === "Signed in as alice (user)", "the account line names the user");
  await text(page, "#notice", (t) => t === "Signed in as alice.", "the sign-in is announced");
  await text(page, "#overview-h", (t) => t === "Overview", "the overview in the empty pane");
  await text(page, "#alerts", (t) => t === "", "the refusal is gone once signed in");
  if (!auth.includes(`Bearer ${userToken}`)) throw new Error(`the calls do not carry the token: ${JSON.stringify(auth.slice(-5))}`);
  // The token stays in the tab's sessionStorage: a reload keeps the session.
  await page.reload();
  await text(page, "#overview-h", (t) => t === "Overview", "the overview after a reload");
  await text(page, "#whoami", (t) => t === "Signed in as alice (user)", "the account line after a reload");
  if (!(await page.locator("#signin").isHidden())) throw new Error("a reload asks for the token again");

  step("keyboard: Tab reaches the skip link, the sections, sign-out and every field of the form, each with a focus outline");
  // With no set yet, the disclose form is open.
  await page.locator("#disclose[open]").waitFor();
  await page.locator('#overview-stats [data-stat="failed"] button').waitFor();
  await tabTour(
    page,
    [
      "Skip to content",
      "Task sets",
      "Bill",
      "Cluster",
      "Sign out",
      "Search",
      "State",
      "Label",
      "List running sets",
      "List queued sets",
      "List failed sets",
      "Disclose a task set",
      "Name",
      "Tasks",
      "Shell",
      "Commands, one per line",
      /^Estimated run time/,
      /^Files to keep/,
      /Request them all now/,
      /No speculative copies/,
      /^Options: retries, timeout/,
      "Disclose",
    ],
    "the task sets view",
  );
  await a11y(page, "empty task sets");

  step("a form without commands is refused with a message on the field");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#f-commands-err", (t) => t.startsWith("Write at least one command"), "the commands field's error");
  const focusedField = await page.evaluate(() => document.activeElement?.id);
  if (focusedField !== "f-commands") throw new Error(`focus is on ${JSON.stringify(focusedField)}, want the commands field`);

  step("disclose three tasks from the form");
  await page.getByLabel("Name").fill("e2e frames");
  await page.getByLabel("Commands, one per line").fill("echo result-zero; echo kept > k.txt\nsleep 120; echo result-one\nsleep 120; echo result-two");
  await page.getByLabel(/Estimated run time/).fill("1s");
  await page.getByLabel(/^Files to keep/).fill("k.txt");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await page.waitForURL(/#\/sets\/\d+$/);
  const setA = page.url().replace(/.*#\/sets\//, "");
  await count(page, "#tasks tbody tr[data-index]", 3, "three task rows");
  await text(page, "#live-status", (t) => t === "Live", "the watch stream is live");
  await text(page, "#detail-h", (t) => t.startsWith("e2e frames"), "set title");
  await text(page, "#notice", (t, id) => t.startsWith(`Disclosed 3 tasks as set #${id}.`), "the disclose is announced", setA);
  await text(page, `#set-list a[data-set="${setA}"]`, (t) => t.includes("e2e frames"), "the new set is in the list");
  for (const i of [1, 2]) await text(page, `tr[data-index="${i}"] [data-col="copies"]`, (t) => /running/.test(t), `task ${i} runs while disclosed`);
  await fits(page, "disclosed set");

  step("keyboard: from the set's heading, Tab reaches its actions, the table's tools and each task's buttons");
  await page.locator("#detail-h").focus();
  for (const want of ["request-all", "retry-failed", "cancel-rest", "f-state", "f-text", "f-sort", "next-running", "next-failed"]) {
    await page.keyboard.press("Tab");
    const id = await page.evaluate(() => document.activeElement?.id);
    if (id !== want) throw new Error(`Tab from the heading lands on ${JSON.stringify(id)}, want #${want}`);
  }
  await page.keyboard.press("Tab");
  const openStop = await page.evaluate(() => [document.activeElement?.closest("tr")?.dataset.index, document.activeElement?.dataset.action]);
  if (openStop[0] !== "0" || openStop[1] !== "open") throw new Error(`the next Tab stop is ${JSON.stringify(openStop)}, want task 0's link to its view`);
  await page.keyboard.press("Tab");
  const firstRowStop = await page.evaluate(() => [document.activeElement?.closest("tr")?.dataset.index, document.activeElement?.dataset.action]);
  if (firstRowStop[0] !== "0" || firstRowStop[1] !== "request") throw new Error(`the next Tab stop is ${JSON.stringify(firstRowStop)}, want task 0's Request`);

  step("request task 0 with the keyboard and see its output");
  await page.keyboard.press("Enter");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t.startsWith("finished"), "task 0 finished");
  await text(page, "#out-stdout", (t) => t === "result-zero", "task 0's output");
  await text(page, "#out-exit", (t) => t === "0", "task 0's exit code");
  await text(page, 'tr[data-index="0"] [data-col="exit"]', (t) => t === "0", "exit code in the row");
  await text(page, 'tr[data-index="0"] [data-col="response"]', (t) => /^\d+(\.\d+)? (ms|s)$/.test(t), "task 0's visible response time");
  const focusRow = await page.evaluate(() => document.activeElement?.closest("tr")?.dataset.index);
  if (focusRow !== "0") throw new Error(`after the live redraw the focus is in row ${JSON.stringify(focusRow)}, want it kept in row 0`);
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download stdout" }).click()]);
  const saved = join(outDir, download.suggestedFilename());
  await download.saveAs(saved);
  const body = await readFile(saved, "utf8");
  if (body !== "result-zero\n") throw new Error(`downloaded ${download.suggestedFilename()} holds ${JSON.stringify(body)}, want "result-zero\\n"`);
  if (download.suggestedFilename() !== `set-${setA}-task-0.stdout.txt`) throw new Error(`download named ${download.suggestedFilename()}`);
  const [keptDownload] = await Promise.all([page.waitForEvent("download"), page.locator('#kept [data-kept="k.txt"]').click()]);
  const keptSaved = join(outDir, keptDownload.suggestedFilename());
  await keptDownload.saveAs(keptSaved);
  const keptBody = await readFile(keptSaved, "utf8");
  if (keptBody !== "kept\n" || keptDownload.suggestedFilename() !== `set-${setA}-task-0-k.txt`) {
    throw new Error(`the kept file downloaded as ${keptDownload.suggestedFilename()} holds ${JSON.stringify(keptBody)}, want set-${setA}-task-0-k.txt with "kept\n"`);
  }
  await a11y(page, "task set");

  step("disclose a second set: it waits for a slot");
  await openForm(page);
  if ((await page.getByLabel("Commands, one per line").inputValue()) !== "") throw new Error("the form still holds the disclosed commands");
  await page.getByLabel("Name").fill("e2e straggler");
  await page.getByLabel("Commands, one per line").fill("sleep 300; echo never");
  await page.getByLabel(/Estimated run time/).fill("1s");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await page.waitForURL((u) => /#\/sets\/\d+$/.test(u.hash) && !u.hash.endsWith(`/${setA}`));
  const setB = page.url().replace(/.*#\/sets\//, "");
  await text(page, "#detail-h", (t) => t.startsWith("e2e straggler"), "the second set's title");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t === "disclosed", "the second set's task waits, disclosed");

  step("the cluster while work runs: both slots busy, one task queued, two copies");
  await page.getByRole("link", { name: "Cluster" }).click();
  await text(page, '[data-stat="slots"] .stat-value', (t) => t === "2 / 2", "both slots busy");
  await text(page, "#notice", (t) => t === "", "the disclose notice stayed with its set");
  await text(page, '[data-stat="disclosed"] .stat-value', (t) => t === "1", "one disclosed task queued");
  await text(page, '[data-stat="requested"] .stat-value', (t) => t === "0", "no requested task queued");
  await text(page, '[data-stat="copies"] .stat-value', (t) => t === "2 running", "two running copies");
  await text(page, '#workers tbody tr[data-worker] td:nth-child(4)', (t) => t === "2", "the worker's two busy slots");
  await fits(page, "busy cluster");
  await a11y(page, "busy cluster");
  await shot("cluster-busy");

  step("a server error: a third open set is refused by the cap; the message says why and the form keeps the input");
  await page.getByRole("link", { name: "Task sets" }).click();
  await openForm(page);
  await page.getByLabel("Name").fill("e2e third");
  await page.getByLabel("Commands, one per line").fill("echo third");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#alerts .problem-title", (t) => t === "Disclosing the task set: the server is busy or a limit was reached.", "the refusal's title");
  await text(page, "#alerts .problem-detail", (t) => /open task sets cap reached/.test(t) && /cancel or finish some first/.test(t), "the server's own message");
  await text(page, "#alerts .problem-hint", (t) => /cancel or finish some of your work/.test(t), "what to do");
  if ((await page.getByLabel("Name").inputValue()) !== "e2e third") throw new Error("the refused form lost its name");
  await text(page, "#notice", (t) => t === "", "no earlier success notice beside the error");
  await count(page, "#set-list a[data-set]", 2, "still two sets");
  await fits(page, "refused disclose");
  await a11y(page, "refused disclose");
  await shot("refused");

  step("cancel the rest of the first set and see them canceled");
  await openSet(setA, "e2e frames");
  await text(page, "#alerts", (t) => t === "", "the refusal is cleared by moving on");
  await page.getByRole("button", { name: /Cancel the rest/ }).click();
  // Two tasks: the page asks first, with the count, and the safe answer has the focus.
  await page.locator("#confirm-cancel[open]").waitFor();
  await text(page, "#confirm-h", (t) => t === "Cancel 2 unrequested tasks?", "the confirmation names the count");
  const safe = await page.evaluate(() => document.activeElement?.id);
  if (safe !== "confirm-no") throw new Error(`the confirmation's focus is on ${JSON.stringify(safe)}, want "Keep them"`);
  await fits(page, "confirm cancel");
  await a11y(page, "confirm cancel");
  await shot("confirm-cancel");
  await page.keyboard.press("Escape");
  await page.locator("#confirm-cancel").waitFor({ state: "hidden" });
  await text(page, 'tr[data-index="1"] [data-col="state"]', (t) => t !== "canceled", "Escape cancels nothing");
  await page.getByRole("button", { name: /Cancel the rest/ }).click();
  await page.getByRole("button", { name: "Cancel 2 tasks" }).click();
  for (const i of [1, 2]) {
    await text(page, `tr[data-index="${i}"] [data-col="state"]`, (t) => t === "canceled", `task ${i} canceled`);
  }
  await text(page, '[data-count="canceled"]', (t) => t === "2 canceled", "count of canceled tasks");
  await text(page, '[data-count="finished"]', (t) => t === "1 finished", "count of finished tasks");
  await text(page, "#notice", (t, id) => t === `Canceled 2 unrequested tasks of set #${id}; they will not be billed.`, "the cancel is announced", setA);
  const after = await page.evaluate(() => [document.activeElement?.id, document.activeElement?.getAttribute("aria-disabled")]);
  if (after[0] !== "cancel-rest" || after[1] !== "true") throw new Error(`after cancel the focus is on ${JSON.stringify(after)}, want the (now disabled) cancel-rest button`);
  await fits(page, "task set");
  await shot("taskset");

  step("the refused form, kept across views, now goes through");
  await openForm(page);
  if ((await page.getByLabel("Name").inputValue()) !== "e2e third") throw new Error("the form lost the refused input when the view changed");
  if ((await page.getByLabel("Commands, one per line").inputValue()) !== "echo third") throw new Error("the form lost the refused commands when the view changed");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#detail-h", (t) => t.startsWith("e2e third"), "the third set, disclosed on the second try");
  await text(page, "#alerts", (t) => t === "", "no error");
  await count(page, "#set-list a[data-set]", 3, "three sets, none twice");

  step("the second set gets a speculative copy, marked as such; cancel the rest of it with the keyboard");
  await openSet(setB, "e2e straggler");
  await text(page, 'tr[data-index="0"] [data-col="copies"]', (t) => /^2 \(1\u00a0spec\)\s*2 running$/.test(t), "two copies of the straggler, one of them speculative, both running");
  await fits(page, "speculative copies");
  await a11y(page, "speculative copies");
  await shot("speculative");
  await page.locator("#cancel-rest").focus();
  await page.keyboard.press("Enter");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t === "canceled", "the straggler canceled");

  step("the server is killed and restarted: the page says the stream dropped, then that it reconnected by itself");
  await openSet(setA, "e2e frames");
  await stop(server, "SIGKILL");
  await text(page, "#live-status", (t) => /^Connection lost.*reconnecting/i.test(t), "the page says the stream dropped");
  if ((await page.locator("#live-status").getAttribute("role")) !== "status") throw new Error("the stream status is not a live region");
  await fits(page, "reconnecting");
  await a11y(page, "reconnecting");
  await shot("reconnecting");
  server = startServer(base.replace("http://", ""), data);
  await waitReady(server);
  await text(page, "#live-status", (t) => /^Live: reconnected by itself after /.test(t), "the page says the stream reconnected");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t.startsWith("finished"), "task 0 still finished");
  await text(page, 'tr[data-index="1"] [data-col="state"]', (t) => t === "canceled", "task 1 still canceled");
  await text(page, 'tr[data-index="2"] [data-col="state"]', (t) => t === "canceled", "task 2 still canceled");
  await text(page, "#alerts", (t) => t === "", "no error left once the server is back");
  await a11y(page, "reconnected");
  await shot("reconnected");

  step("the bill has exactly one billed task");
  await page.getByRole("link", { name: "Bill" }).click();
  await text(page, '#bill-totals [data-total="lines"] td', (t) => t === "1", "one billed task in the totals");
  await text(page, '#bill-totals [data-total="amount"] td', (t) => Number(t.replace(/[^0-9.]/g, "")) > 0, "an amount due at the default price");
  await count(page, "#bill-lines tbody tr", 1, "one bill line");
  const line = await page.locator("#bill-lines tbody tr").first().textContent();
  if (!line.includes(`e2e frames #${setA}`)) throw new Error(`bill line ${JSON.stringify(line)} does not name set ${setA}`);
  const billed = await page.locator('#bill-totals [data-total="billed"] td').textContent();
  await text(page, ".chart .seg-billed .chart-value", (t, want) => t === want, "the chart's billed bar shows the billed slot-seconds", billed.trim());
  const bars = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll(".chart .seg")].map((g) => [g.getAttribute("class"), g.querySelector(".chart-bar").getBoundingClientRect().width])));
  const freeBars = Object.entries(bars).filter(([k, w]) => k !== "seg seg-billed" && w > 0);
  if (!(bars["seg seg-billed"] > 0) || freeBars.length === 0) throw new Error(`the chart lacks a billed bar or a free bar (canceled work ran): ${JSON.stringify(bars)}`);
  await text(page, ".chart figcaption", (t) => /% of the slot time spent on your work is billed; \d+% is free\.$/.test(t), "the chart's caption");
  await fits(page, "bill");
  await a11y(page, "bill");
  await shot("bill");

  step("retry the two canceled tasks in place, see their attempts, cancel them again");
  await page.getByRole("link", { name: "Task sets" }).click();
  await openSet(setA, "e2e frames");
  await page.getByRole("button", { name: /Retry failed/ }).click();
  // Two tasks: the page asks first, with the count, and the safe answer has the focus.
  await page.locator("#confirm-retry[open]").waitFor();
  await text(page, "#retry-h", (t) => t === "Retry 2 tasks?", "the retry confirmation names the count");
  const safeRetry = await page.evaluate(() => document.activeElement?.id);
  if (safeRetry !== "retry-no") throw new Error(`the retry confirmation's focus is on ${JSON.stringify(safeRetry)}, want "Not now"`);
  await a11y(page, "confirm retry");
  await shot("confirm-retry");
  await page.getByRole("button", { name: "Retry 2 tasks" }).click();
  for (const i of [1, 2]) {
    await text(page, `tr[data-index="${i}"] [data-col="state"]`, (t) => /^disclosed\s*↻2$/.test(t), `task ${i} disclosed again as attempt 2`);
  }
  await text(page, "#notice", (t, id) => t === `Retrying 2 tasks of set #${id} in place, each as its next attempt.`, "the retry is announced", setA);
  await page.locator('tr[data-index="1"] button[data-action="attempts"]').click();
  await text(page, "#output-h", (t) => t === "Task 1 in detail", "the task's detail opens");
  await text(page, "#attempts tbody tr:first-child", (t) => /^1canceled/.test(t.replace(/\s+/g, "")), "attempt 1 was canceled");
  await text(page, "#attempts tbody tr.current", (t) => t.startsWith("2 (current)"), "attempt 2 is the current one");
  await fits(page, "task detail");
  await a11y(page, "task detail");
  await shot("task-detail");
  await page.getByRole("button", { name: /Cancel the rest/ }).click();
  await page.getByRole("button", { name: "Cancel 2 tasks" }).click();
  for (const i of [1, 2]) await text(page, `tr[data-index="${i}"] [data-col="state"]`, (t) => /^canceled/.test(t), `task ${i} canceled again`);

  step("sign out, sign in as the admin, and read the cluster");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("#signin").waitFor({ state: "visible" });
  await text(page, "#notice", (t) => t === "Signed out.", "the sign-out is announced");
  await text(page, "#alerts", (t) => t === "", "no error after signing out, only the sign-in box");
  const focusedToken = await page.evaluate(() => document.activeElement?.id);
  if (focusedToken !== "token") throw new Error(`after sign-out the focus is on ${JSON.stringify(focusedToken)}, want the token field`);
  await page.keyboard.type(adminToken);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await text(page, "#whoami", (t) => t === "Signed in as admin (admin)", "the account line names the admin");
  await page.getByRole("link", { name: "Cluster" }).click();
  await text(page, '[data-stat="slots"] .stat-value', (t) => t === "0 / 2", "two idle slots");
  await text(page, '[data-stat="slots"] .muted', (t) => t === "1 worker", "one worker");
  await count(page, "#workers tbody tr[data-worker]", 1, "one worker row (the embedded slots)");
  await text(page, "#workers tbody tr[data-worker] td:nth-child(3)", (t) => t === "2", "the worker's two slots");
  await text(page, "#workers tbody tr[data-worker] .badge", (t) => t === "up", "the worker is up");
  for (const [k, re] of [
    ["load", /^\d+%$/],
    ["requested", /^0$/],
    ["disclosed", /^0$/],
    ["copies", /^0 running$/],
    ["beta", /^\d+(\.\d+)?$/],
    ["spec", /^\d+ won \/ \d+$/],
    ["free", /^\d+(\.\d+)? slot-s$/],
    ["executed_unrequested", /^\d+(\.\d+)? slot-s$/],
    ["speculative_lost", /^\d+(\.\d+)? slot-s$/],
    ["canceled", /^\d+(\.\d+)? slot-s$/],
    ["lost_with_worker", /^\d+(\.\d+)? slot-s$/],
    ["policy", /^srpt×fcfs$/],
  ]) {
    await text(page, `[data-stat="${k}"] .stat-value`, (t, src) => new RegExp(src).test(t), `the cluster's ${k}`, re.source);
  }
  await text(page, "#cluster-since", (t) => t.startsWith("Load, β, finished tasks, speculative copies and free work are counted since the server started"), "what the counters count");
  await fits(page, "cluster");
  await a11y(page, "cluster");
  await shot("cluster");

  step("a set that does not exist: the page says so and stops watching");
  await page.goto(`${base}/#/sets/999999`);
  await text(page, "#alerts", (t) => t.includes("it was not found"), "the not-found error");
  await text(page, "#live-status", (t) => t.startsWith("Stopped"), "the watch stopped");

  if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n${pageErrors.join("\n")}`);
  console.log(`e2e: ok (screenshots in ${outDir})`);
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
