// End-to-end test of the page in a real Chromium against a real batchd.
//
//   BATCHD_BIN=/path/to/batchd npm run e2e
//
// Starts `batchd serve` on a free loopback port with a temporary data
// directory and two slots, then drives the page with clicks and typing:
// sign in (a wrong token is refused; the admin token batchd wrote into its
// data directory is typed into the page's token field), disclose three tasks, request one and read its output, cancel the rest,
// survive a server restart (the watch stream reconnects by itself), and read
// the bill with exactly one billed task. Screenshots go to web/e2e/out/.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "out");
// npm runs scripts in web/; a relative BATCHD_BIN means relative to where npm was started.
const bin = process.env.BATCHD_BIN ? resolve(process.env.INIT_CWD || process.cwd(), process.env.BATCHD_BIN) : "";
const chromiumPath = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const stepTimeout = Number(process.env.E2E_STEP_TIMEOUT_MS || 30000);

if (!bin) {
  console.error("e2e: set BATCHD_BIN to a built batchd binary (go build -o bin/batchd ./cmd/batchd)");
  process.exit(2);
}

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

let log = "";
function startServer(port, data) {
  const p = spawn(bin, ["serve", "--listen", `127.0.0.1:${port}`, "--data", data, "--slots", "2"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (b) => {
    log += b.toString();
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  p.stdout.on("data", keep);
  p.stderr.on("data", keep);
  p.exited = new Promise((res) => p.once("exit", (code, sig) => res({ code, sig })));
  return p;
}

async function waitReady(base, proc) {
  const deadline = Date.now() + stepTimeout;
  let last = "";
  while (Date.now() < deadline) {
    const gone = await Promise.race([proc.exited, new Promise((r) => setTimeout(() => r(null), 100))]);
    if (gone) throw new Error(`batchd exited before serving (${JSON.stringify(gone)})`);
    try {
      const r = await fetch(base + "/");
      if (r.ok && (await r.text()).includes('id="main"')) return;
      last = `status ${r.status}`;
    } catch (e) {
      last = String(e);
    }
  }
  throw new Error(`batchd did not serve the page at ${base} (${last})`);
}

async function stop(proc, signal = "SIGTERM") {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill(signal);
  const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  await proc.exited;
  clearTimeout(t);
}

function step(name) {
  console.log(`e2e: ${name}`);
}

/** text waits until the element's trimmed text satisfies pred, and returns it. */
async function text(page, selector, pred, what) {
  try {
    const h = await page.waitForFunction(
      ([sel, src]) => {
        const el = document.querySelector(sel);
        if (!el) return false;
        const t = el.textContent.trim();
        return new Function("t", `return (${src})(t)`)(t) ? t : false;
      },
      [selector, pred.toString()],
      { timeout: stepTimeout },
    );
    return await h.jsonValue();
  } catch (e) {
    const now = await page.locator(selector).first().textContent({ timeout: 1000 }).catch(() => "(missing)");
    throw new Error(`${what}: ${selector} shows ${JSON.stringify(now)}`);
  }
}

async function count(page, selector, n, what) {
  try {
    await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n, [selector, n], { timeout: stepTimeout });
  } catch {
    const got = await page.locator(selector).count();
    throw new Error(`${what}: ${got} × ${selector}, want ${n}`);
  }
}

/** fits fails when the page or a table is wider than the 1280×800 window. */
async function fits(page, what) {
  const over = await page.evaluate(() => {
    const bad = [];
    if (document.documentElement.scrollWidth > window.innerWidth) bad.push(`page ${document.documentElement.scrollWidth}px`);
    for (const w of document.querySelectorAll(".table-wrap")) {
      if (w.scrollWidth > w.clientWidth + 1) bad.push(`${w.querySelector("table")?.id || "table"} ${w.scrollWidth}px in ${w.clientWidth}px`);
    }
    return bad;
  });
  if (over.length) throw new Error(`${what} view does not fit 1280×800: ${over.join(", ")}`);
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const data = await mkdtemp(join(tmpdir(), "batchd-web-e2e-"));
await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
let server = startServer(port, data);
let browser;
const pageErrors = [];
let failed = false;
try {
  await waitReady(base, server);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(stepTimeout);
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  step("open the page");
  await page.goto(base + "/");
  step("sign in: the server asks for a token; a wrong one is refused, the admin's works");
  await page.locator("#signin").waitFor({ state: "visible" });
  const auth = [];
  page.on("request", (r) => {
    if (r.url().includes("/batch.v1.")) auth.push(r.headers()["authorization"] ?? null);
  });
  await page.getByLabel("Token").fill("bd_wrongwrongwrongwrongwrongwrong00");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !document.getElementById("signin").hidden && document.querySelector("#alerts .problem"));
  const adminToken = (await readFile(join(data, "admin.token"), "utf8")).trim();
  await page.getByLabel("Token").fill(adminToken);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await page.waitForFunction(() => document.getElementById("account").textContent.includes("Signed in"));
  await text(page, "#set-detail h2", (t) => t === "No task set selected", "empty detail");
  if (!auth.includes(`Bearer ${adminToken}`)) throw new Error(`the calls do not carry the token: ${JSON.stringify(auth.slice(-5))}`);
  // The token stays in the tab's sessionStorage: a reload keeps the
  // session and starts the keyboard tour from the top of the page.
  await page.reload();
  await text(page, "#set-detail h2", (t) => t === "No task set selected", "empty detail after a reload");
  if (!(await page.locator("#signin").isHidden())) throw new Error("a reload asks for the token again");

  step("keyboard: the skip link comes first, then the sections");
  await page.keyboard.press("Tab");
  const first = await page.evaluate(() => document.activeElement?.textContent?.trim());
  if (first !== "Skip to content") throw new Error(`first Tab stop is ${JSON.stringify(first)}, want the skip link`);
  await page.keyboard.press("Tab");
  const second = await page.evaluate(() => document.activeElement?.textContent?.trim());
  if (second !== "Task sets") throw new Error(`second Tab stop is ${JSON.stringify(second)}, want the Task sets link`);

  step("a form without commands is refused with a message on the field");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#f-commands-err", (t) => t.startsWith("Write at least one command"), "the commands field's error");
  const focusedField = await page.evaluate(() => document.activeElement?.id);
  if (focusedField !== "f-commands") throw new Error(`focus is on ${JSON.stringify(focusedField)}, want the commands field`);

  step("disclose three tasks from the form");
  await page.getByLabel("Name").fill("e2e frames");
  await page.getByLabel("Commands, one per line").fill("echo result-zero\nsleep 120; echo result-one\nsleep 120; echo result-two");
  await page.getByLabel(/Estimated run time/).fill("1s");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await page.waitForURL(/#\/sets\/\d+$/);
  const setId = page.url().replace(/.*#\/sets\//, "");
  await count(page, "#tasks tbody tr[data-index]", 3, "three task rows");
  await text(page, "#live-status", (t) => t === "Live", "the watch stream is live");
  await text(page, "#detail-h", (t) => t.startsWith("e2e frames"), "set title");
  await text(page, `#set-list a[data-set="${setId}"]`, (t) => t.includes("e2e frames"), "the new set is in the list");

  step("request task 0 with the keyboard and see its output");
  await page.locator('tr[data-index="0"] button[data-action="request"]').focus();
  await page.keyboard.press("Enter");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t.startsWith("finished"), "task 0 finished");
  await text(page, "#out-stdout", (t) => t === "result-zero", "task 0's output");
  await text(page, "#out-exit", (t) => t === "0", "task 0's exit code");
  await text(page, 'tr[data-index="0"] [data-col="exit"]', (t) => t === "0", "exit code in the row");
  const focusRow = await page.evaluate(() => document.activeElement?.closest("tr")?.dataset.index);
  if (focusRow !== "0") throw new Error(`after the live redraw the focus is in row ${JSON.stringify(focusRow)}, want it kept in row 0`);
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download stdout" }).click()]);
  const saved = join(outDir, download.suggestedFilename());
  await download.saveAs(saved);
  const body = await readFile(saved, "utf8");
  if (body !== "result-zero\n") throw new Error(`downloaded ${download.suggestedFilename()} holds ${JSON.stringify(body)}, want "result-zero\\n"`);
  if (download.suggestedFilename() !== `set-${setId}-task-0.stdout.txt`) throw new Error(`download named ${download.suggestedFilename()}`);

  step("cancel the rest and see them canceled");
  await page.getByRole("button", { name: /Cancel the rest/ }).click();
  for (const i of [1, 2]) {
    await text(page, `tr[data-index="${i}"] [data-col="state"]`, (t) => t === "canceled", `task ${i} canceled`);
  }
  await text(page, '[data-count="canceled"]', (t) => t === "2 canceled", "count of canceled tasks");
  await text(page, '[data-count="finished"]', (t) => t === "1 finished", "count of finished tasks");
  const after = await page.evaluate(() => [document.activeElement?.id, document.activeElement?.getAttribute("aria-disabled")]);
  if (after[0] !== "cancel-rest" || after[1] !== "true") throw new Error(`after cancel the focus is on ${JSON.stringify(after)}, want the (now disabled) cancel-rest button`);
  await fits(page, "task set");
  await page.screenshot({ path: join(outDir, "taskset.png") });

  step("the server restarts: the stream says so and reconnects by itself");
  await stop(server, "SIGKILL");
  await text(page, "#live-status", (t) => /reconnecting/i.test(t), "the page says the stream dropped");
  await page.screenshot({ path: join(outDir, "reconnecting.png") });
  server = startServer(port, data);
  await waitReady(base, server);
  await text(page, "#live-status", (t) => t === "Live", "the stream is live again");
  await text(page, 'tr[data-index="0"] [data-col="state"]', (t) => t.startsWith("finished"), "task 0 still finished");
  await text(page, 'tr[data-index="1"] [data-col="state"]', (t) => t === "canceled", "task 1 still canceled");

  step("the bill has exactly one billed task");
  await page.getByRole("link", { name: "Bill" }).click();
  await text(page, '#bill-totals [data-total="lines"] td', (t) => t === "1", "one billed task in the totals");
  await text(page, '#bill-totals [data-total="amount"] td', (t) => Number(t.replace(/[^0-9.]/g, "")) > 0, "an amount due at the default price");
  await count(page, "#bill-lines tbody tr", 1, "one bill line");
  const line = await page.locator("#bill-lines tbody tr").first().textContent();
  if (!line.includes(`e2e frames #${setId}`) && !line.includes(`#${setId}`)) throw new Error(`bill line ${JSON.stringify(line)} does not name set ${setId}`);
  await page.locator(".chart svg").waitFor();
  await fits(page, "bill");
  await page.screenshot({ path: join(outDir, "bill.png") });

  step("the cluster shows two slots");
  await page.getByRole("link", { name: "Cluster" }).click();
  await text(page, '[data-stat="slots"] .stat-value', (t) => /\/ 2$/.test(t), "two slots");
  await count(page, "#workers tbody tr[data-worker]", 1, "one worker (the embedded slots)");
  await fits(page, "cluster");
  await page.screenshot({ path: join(outDir, "cluster.png") });

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
  await writeFile(join(outDir, "batchd.log"), log).catch(() => {});
  console.error(`--- batchd log (tail) ---\n${log.slice(-4000)}`);
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
