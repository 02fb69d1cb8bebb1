// End-to-end test of the set list, the overview, the disclose form's
// options and dark mode, in a real Chromium against a real batchd:
//
//   BATCHD_BIN=/path/to/batchd node e2e/list.mjs
//
//   - with 150 sets the list pages past the newest 100 (Older, Newer), and
//     search finds an old one by name and by id;
//   - filters by state and label ask the server (ListTaskSets' filters);
//   - each set shows a state badge, failed and canceled ones too;
//   - with no set open, the wide pane shows an overview (running, queued,
//     failed, the cluster's slots);
//   - at 390×844 and 1280×800 the views fit, and their text keeps WCAG AA
//     contrast in the light and the dark scheme.
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { a11y, addUser, count, launch, needBin, serverLog, startServer, step, stepTimeout, stop, text, waitReady } from "./lib.mjs";

needBin();
const data = await mkdtemp(join(tmpdir(), "batchd-web-list-"));
// No local slots: the sets stay queued unless the test ends them.
const server = startServer("127.0.0.1:0", data, ["--slots", "0"]);
let browser;
let failed = false;
const pageErrors = [];
try {
  const base = await waitReady(server);
  const token = await addUser(data, "carol");
  const call = async (method, body, tok = token) => {
    const r = await fetch(`${base}/batch.v1.TaskSetService/${method}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${tok}` },
      body: JSON.stringify(body),
    });
    const j = await r.json();
    if (!r.ok) throw new Error(`${method}: ${r.status} ${JSON.stringify(j)}`);
    return j;
  };

  step("disclose 150 sets through the API; cancel two, label every tenth");
  const ids = [];
  for (let i = 1; i <= 150; i++) {
    const name = `old-${String(i).padStart(3, "0")}`;
    const labels = i % 10 === 0 ? [{ key: "proj", value: "ten" }] : [];
    const r = await call("Disclose", { name, tasks: [{ argv: ["true"] }], idempotencyKey: `k-${i}`, labels });
    ids.push(BigInt(r.taskSet.id));
  }
  await call("Cancel", { setId: String(ids[1]), all: true });
  await call("Cancel", { setId: String(ids[148]), all: true });

  browser = await launch();
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    const context = await browser.newContext({ viewport: { width, height } });
    await context.addInitScript((t) => sessionStorage.setItem("batchd.token", t), token);
    const page = await context.newPage();
    page.setDefaultTimeout(stepTimeout);
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    const size = `${width}×${height}`;
    const names = () => page.locator("#set-list .set-name").allTextContents();

    step(`${size}: the list shows the newest sets first, with state badges`);
    await page.goto(base + "/");
    await text(page, "#set-list li:first-child .set-name", (t) => t === "old-150", "the newest set first");
    await text(page, `#set-list a[data-set="${ids[148]}"] .set-state`, (t) => t.endsWith("canceled"), "a canceled set's badge");
    await text(page, `#set-list a[data-set="${ids[147]}"] .set-state`, (t) => t.endsWith("queued"), "a queued set's badge");

    step(`${size}: the list pages past 100 and back`);
    for (const want of ["old-100", "old-050"]) {
      await page.locator("#sets-older").click();
      await text(page, "#set-list li:first-child .set-name", (t, want) => t === want, `the next page starts at ${want}`, want);
    }
    const last = await names();
    if (last.at(-1) !== "old-001" || last.length !== 50) throw new Error(`the third page ends at ${last.at(-1)} with ${last.length} sets`);
    if (!(await page.locator("#sets-older").isHidden())) throw new Error("Older is offered on the last page");
    await text(page, `#set-list a[data-set="${ids[1]}"] .set-state`, (t) => t.endsWith("canceled"), "the old canceled set's badge");
    await page.locator("#sets-newer").click();
    await text(page, "#set-list li:first-child .set-name", (t) => t === "old-100", "Newer goes back a page");
    await page.locator("#sets-newer").click();
    await text(page, "#set-list li:first-child .set-name", (t) => t === "old-150", "back on the first page");

    step(`${size}: search finds an old set by name and by id`);
    await page.locator("#sets-q").fill("old-007");
    await text(page, "#set-list", (t) => t.includes("old-007") && !t.includes("old-150"), "a name search");
    if ((await names()).join() !== "old-007") throw new Error(`searching old-007 lists ${await names()}`);
    await page.locator("#sets-q").fill(`#${ids[2]}`);
    await text(page, "#set-list", (t) => t.includes("old-003") && !t.includes("old-150"), "an id search");
    if ((await names()).join() !== "old-003") throw new Error(`searching #${ids[2]} lists ${await names()}`);
    await page.locator("#sets-q").fill(String(ids[2]));
    await text(page, "#set-list li:first-child .set-name", (t) => t === "old-003", "a number finds the set of that id first");
    await page.locator("#sets-q").fill("nothing-like-it");
    await text(page, "#set-list-note", (t) => t === "No task set matches.", "an empty search says so");
    await page.locator("#sets-q").fill("");

    step(`${size}: filters by state and label`);
    await page.locator("#sets-state").selectOption("canceled");
    await text(page, "#set-list", (t) => !t.includes("old-150"), "the state filter");
    if ((await names()).join() !== "old-149,old-002") throw new Error(`canceled lists ${await names()}`);
    await page.locator("#sets-state").selectOption("");
    await page.locator("#sets-label").fill("proj=ten");
    await count(page, "#set-list li", 15, "the label filter");
    const ten = await names();
    if (ten.length !== 15 || ten.some((n) => !n.endsWith("0"))) throw new Error(`proj=ten lists ${ten}`);
    await page.locator("#sets-label").fill("");
    await text(page, "#set-list li:nth-child(2) .set-name", (t) => t === "old-149", "the label filter cleared");

    step(`${size}: the empty pane shows the overview`);
    await text(page, '#overview-stats [data-stat="queued"] .stat-value', (t) => t === "148", "queued sets in the overview");
    await text(page, '#overview-stats [data-stat="failed"] .stat-value', (t) => t === "0", "failed sets in the overview");
    await text(page, '#overview-stats [data-stat="load"] .stat-value', (t) => t === "0 / 0 slots busy", "the cluster's slots in the overview");

    step(`${size}: each view in the light and the dark scheme: dark when asked, AA contrast, no overflow`);
    const views = [
      ["sets", "#/sets", "#overview-stats .stat"],
      ["set", `#/sets/${ids[5]}`, "#live-status.live"],
      ["cluster", "#/cluster", '[data-stat="slots"]'],
      ["bill", "#/bill", "main h2"],
    ];
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [name, hash, ready] of views) {
        await page.evaluate((h) => (location.hash = h), hash);
        await page.locator(ready).first().waitFor();
        const bg = await page.evaluate(() => getComputedStyle(document.querySelector("main .card") ?? document.body).backgroundColor);
        const dark = /rgb\((\d+), (\d+), (\d+)/.exec(bg).slice(1).map(Number).reduce((a, b) => a + b) < 3 * 80;
        if (dark !== (scheme === "dark")) throw new Error(`${size} ${name}: the ${scheme} scheme draws cards in ${bg}`);
        if (name === "cluster" || name === "set") await charts(page, name === "cluster" ? "#history" : "#set-history", `${size} ${scheme} ${name}`);
        await a11y(page, `${size} ${scheme} ${name}`);
        const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        if (over > 0) throw new Error(`${size} ${scheme} ${name}: the page is ${over}px wider than the window`);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.evaluate(() => (location.hash = "#/sets"));
    await context.close();
  }
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript((t) => sessionStorage.setItem("batchd.token", t), token);
    const page = await context.newPage();
    page.setDefaultTimeout(stepTimeout);
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.goto(base + "/");
    await discloseWithOptions(page, ids[0]);
    await context.close();
  }
  {
    step("360×740: the cluster's charts over time read at phone width");
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    await context.addInitScript((t) => sessionStorage.setItem("batchd.token", t), token);
    const page = await context.newPage();
    page.setDefaultTimeout(stepTimeout);
    await page.goto(base + "/#/cluster");
    await charts(page, "#history", "360 cluster");
    await a11y(page, "360 cluster");
    await context.close();
  }
  console.log("e2e list: ok");

  // charts checks a card of charts over time: three series, each with a
  // line from the server's samples, labels of 12 px or more, the plot at
  // least 280 px wide and inside the window.
  async function charts(page, card, what) {
    await count(page, `${card} .hchart`, 3, `${what}: three charts over time`);
    await page.locator(`${card} .hchart-line`).first().waitFor({ state: "attached" });
    const bad = await page.evaluate((card) => {
      const out = [];
      for (const f of document.querySelectorAll(`${card} .hchart`)) {
        const svg = f.querySelector("svg").getBoundingClientRect();
        if (svg.width < 280 || svg.right > innerWidth) out.push(`${f.dataset.series} plot ${Math.round(svg.width)}px wide, right edge ${Math.round(svg.right)}`);
        if (!f.querySelector(".hchart-line")) out.push(`${f.dataset.series} has no line`);
        for (const el of f.querySelectorAll("figcaption span, .hchart-max, .hchart-time span")) {
          if (parseFloat(getComputedStyle(el).fontSize) < 12) out.push(`${JSON.stringify(el.textContent)} in ${getComputedStyle(el).fontSize}`);
        }
      }
      return out;
    }, card);
    if (bad.length) throw new Error(`${what}: ${bad.join("; ")}`);
  }

  // discloseWithOptions fills every option of the form and checks that the server holds them.
  async function discloseWithOptions(page, afterId) {
    step("the disclose form's options: a set disclosed with them holds them");
    const form = page.locator("#disclose-form");
    const left = await form.evaluate((f) => f.getBoundingClientRect().left);
    if (left < 330) throw new Error(`the form starts at ${left}px: it should use the wide pane, not the 300px side bar`);
    await page.getByLabel("Name").fill("with options");
    await page.getByLabel("Commands, one per line").fill("echo a\necho b");
    await page.locator("#disclose-opts summary").click();
    await page.getByLabel("Timeout").fill("10m");
    await page.getByLabel("CPUs").fill("2");
    await page.getByLabel("Memory").fill("512M");
    await page.getByLabel("Retries", { exact: true }).fill("3");
    await page.getByLabel("Retry on").fill("7,timeout");
    await page.getByLabel("Max running copies").fill("1");
    await page.getByLabel("Wait for (after)").fill(`${afterId}:any`);
    await page.getByLabel("Labels").fill("proj=opts team=web");
    await page.getByLabel("a task succeeds (exits 0)").check();
    await page.getByLabel("a task exits with").fill("3,4");
    await page.getByLabel("its output matches (regex)").fill("^found");
    await page.getByLabel("this many tasks succeeded").fill("2");
    await a11y(page, "disclose form with options");
    await page.getByRole("button", { name: "Disclose", exact: true }).click();
    await page.waitForURL(/#\/sets\/\d+$/);
    const id = page.url().replace(/.*#\/sets\//, "");
    const g = await call("GetTaskSet", { setId: id, pageSize: 10 });
    const ts = g.taskSet;
    const want = {
      maxRunning: 1,
      retry: { retries: 3, exitCodes: [7], timeout: true },
      stop: { onSuccess: true, onExit: [3, 4], onOutput: "^found", after: 2 },
      after: [{ setId: String(afterId), anyOutcome: true }],
      labels: [{ key: "proj", value: "opts" }, { key: "team", value: "web" }],
    };
    for (const [k, v] of Object.entries(want)) {
      if (JSON.stringify(ts[k]) !== JSON.stringify(v)) throw new Error(`the set's ${k} is ${JSON.stringify(ts[k])}, want ${JSON.stringify(v)}`);
    }
    const spec = g.tasks?.[0]?.spec;
    if (!spec || spec.timeoutSeconds !== 600 || spec.cpus !== 2 || String(spec.memoryMb) !== "512") {
      throw new Error(`the first task's spec is ${JSON.stringify(spec)}, want timeout 600 s, 2 CPUs, 512 MiB`);
    }
    await text(page, `#set-list a[data-set="${id}"] .set-state`, (t) => t.endsWith("waiting"), "a set waiting for another shows it");
  }
} catch (e) {
  failed = true;
  console.error("e2e list FAILED:", e.message);
  console.error(serverLog().slice(-3000));
} finally {
  await browser?.close();
  await stop(server);
}
if (pageErrors.length) {
  console.error("page errors:", pageErrors);
  failed = true;
}
process.exit(failed ? 1 : 0);
