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
//   - disclose three tasks, request one and read (and download) its output;
//   - the cluster while work runs: busy slots, the disclosed queue, copies;
//   - a server error: a third open set is refused by the cap, the message
//     says why, the form keeps what was typed; after canceling the rest of
//     the first set, the same form goes through;
//   - a speculative copy is marked as such;
//   - kill -9 and restart of batchd: the page says the stream dropped, then
//     that it reconnected by itself, and shows the same states;
//   - the bill: exactly one billed task, and its chart;
//   - sign out, sign in as the admin, and read the cluster;
//   - every view fits 1280×800, its text meets WCAG AA contrast, its inputs
//     have labels and its controls have names.
//
// Screenshots go to web/e2e/out/.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "out");
// npm runs scripts in web/; a relative BATCHD_BIN means relative to where npm was started.
const bin = process.env.BATCHD_BIN ? resolve(process.env.INIT_CWD || process.cwd(), process.env.BATCHD_BIN) : "";
const chromiumPath = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
// A bound on a hang, not a measurement: a loaded CI machine stays far inside it.
const stepTimeout = Number(process.env.E2E_STEP_TIMEOUT_MS || 120000);

if (!bin) {
  console.error("e2e: set BATCHD_BIN to a built batchd binary (go build -o bin/batchd ./cmd/batchd)");
  process.exit(2);
}

let log = "";
// startServer starts batchd on listen ("127.0.0.1:0": a port the kernel
// picks, learnt from the "serving on" line; a restart passes that address).
function startServer(listen, data) {
  const p = spawn(bin, ["serve", "--listen", listen, "--data", data, "--slots", "2", "--max-open-sets", "2"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (b) => {
    log += b.toString();
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  p.stdout.on("data", keep);
  p.stderr.on("data", keep);
  p.exited = new Promise((res) => p.once("exit", (code, sig) => res({ code, sig })));
  let out = "";
  p.serving = new Promise((res) => {
    p.stdout.on("data", (b) => {
      out += b.toString();
      const m = out.match(/batchd serving on (http:\/\/\S+)/);
      if (m) res(m[1]);
    });
  });
  return p;
}

// waitReady waits for batchd's "serving on" line, then for the page, and
// returns the base URL.
async function waitReady(proc) {
  const base = await Promise.race([
    proc.serving,
    proc.exited.then((gone) => {
      throw new Error(`batchd exited before serving (${JSON.stringify(gone)})`);
    }),
  ]);
  const r = await fetch(base + "/");
  if (!r.ok || !(await r.text()).includes('id="main"')) throw new Error(`batchd did not serve the page at ${base} (status ${r.status})`);
  return base;
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

/**
 * text waits until the element's trimmed text satisfies pred, and returns
 * it. pred runs in the page, so it sees only its arguments: (text, arg).
 */
async function text(page, selector, pred, what, arg) {
  try {
    const h = await page.waitForFunction(
      ([sel, src, arg]) => {
        const el = document.querySelector(sel);
        if (!el) return false;
        const t = el.textContent.trim();
        return new Function("t", "arg", `return (${src})(t, arg)`)(t, arg) ? { t } : false; // an object, so that "" counts as found
      },
      [selector, pred.toString(), arg],
      { timeout: stepTimeout },
    );
    return (await h.jsonValue()).t;
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

/** openForm opens the disclose form, folded away once there are sets. */
async function openForm(page) {
  if (!(await page.locator("#disclose").evaluate((d) => d.open))) await page.locator("#disclose summary").click();
  await page.getByLabel("Name").waitFor();
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


/** addUser runs `batchd user add` on the live server's data directory and returns the new token. */
function addUser(data, name) {
  return new Promise((res, rej) => {
    const p = spawn(bin, ["user", "add", "--data", data, name], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (b) => (out += b));
    p.stderr.on("data", (b) => (out += b));
    p.once("exit", (code) => {
      const m = /\bbd_[A-Za-z0-9_-]+/.exec(out);
      if (code === 0 && m) res(m[0]);
      else rej(new Error(`batchd user add ${name} exited ${code}: ${out}`));
    });
  });
}

/**
 * tabTour presses Tab from the start of the page and returns, for each stop
 * until want is covered, its accessible-ish name and whether it shows a
 * focus outline. It fails unless the stops begin with want, in order.
 */
async function tabTour(page, want, what) {
  await page.evaluate(() => {
    document.activeElement?.blur();
    window.scrollTo(0, 0);
  });
  // Start from the very top, as a fresh page load does.
  await page.evaluate(() => {
    const a = document.createElement("span");
    a.tabIndex = -1;
    document.body.prepend(a);
    a.focus();
    a.remove();
  });
  const stops = [];
  for (let i = 0; i < want.length; i++) {
    await page.keyboard.press("Tab");
    stops.push(
      await page.evaluate(() => {
        const a = document.activeElement;
        if (!a || a === document.body) return { name: "(body)", outline: false };
        const name = (a.getAttribute("aria-label") || a.labels?.[0]?.textContent || a.textContent || "").replace(/\s+/g, " ").trim();
        const cs = getComputedStyle(a);
        const r = a.getBoundingClientRect();
        const outline = cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) >= 2;
        const onScreen = r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
        return { name, outline, onScreen };
      }),
    );
  }
  const names = stops.map((s) => s.name);
  for (let i = 0; i < want.length; i++) {
    const ok = typeof want[i] === "string" ? names[i] === want[i] : want[i].test(names[i]);
    if (!ok) throw new Error(`${what}: Tab stop ${i + 1} is ${JSON.stringify(names[i])}, want ${want[i]}; stops: ${JSON.stringify(names)}`);
    if (!stops[i].outline) throw new Error(`${what}: Tab stop ${JSON.stringify(names[i])} shows no focus outline`);
    if (!stops[i].onScreen) throw new Error(`${what}: Tab stop ${JSON.stringify(names[i])} is focused off screen`);
  }
}

/**
 * a11y checks what the person sees in the current view: every visible text
 * (and placeholder, and chart label) against WCAG AA contrast on its
 * background (4.5:1, or 3:1 for large text; controls marked disabled are
 * exempt), every input labelled and every button and link named.
 */
async function a11y(page, what) {
  const bad = await page.evaluate(() => {
    const parse = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return [r, g, b, a];
    };
    const over = (fg, bg) => [0, 1, 2].map((i) => fg[i] * fg[3] + bg[i] * (1 - fg[3])).concat(1);
    const bgOf = (el) => {
      const chain = [];
      for (let e = el; e && e.nodeType === 1; e = e.parentElement) chain.push(parse(getComputedStyle(e).backgroundColor));
      let bg = [255, 255, 255, 1];
      for (const c of chain.reverse()) if (c && c[3] > 0) bg = over(c, bg);
      return bg;
    };
    const lum = ([r, g, b]) =>
      [r, g, b].map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    const ratio = (a, b) => {
      const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
      return (x + 0.05) / (y + 0.05);
    };
    const visible = (el) => {
      const r = el.getBoundingClientRect();
      return r.width > 1 && r.height > 1 && getComputedStyle(el).visibility !== "hidden" && !el.closest("[hidden]");
    };
    const out = [];
    const check = (el, colour, label) => {
      const cs = getComputedStyle(el);
      const size = parseFloat(cs.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(cs.fontWeight) >= 700);
      const bg = bgOf(el);
      const fg = over(parse(colour), bg);
      const r = ratio(fg, bg);
      if (r < (large ? 3 : 4.5)) out.push(`contrast ${r.toFixed(2)} for ${JSON.stringify(label.slice(0, 40))} (${colour} on rgb(${bg.slice(0, 3).map(Math.round)}))`);
    };
    for (const el of document.querySelectorAll("body *")) {
      if (!visible(el) || el.closest('[aria-disabled="true"]')) continue;
      const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim()).map((n) => n.textContent.trim()).join(" ");
      if (own && !(el instanceof SVGElement)) check(el, getComputedStyle(el).color, own);
      if (own && el instanceof SVGElement) check(el, getComputedStyle(el).fill, own);
      if ((el.tagName === "INPUT" || el.tagName === "TEXTAREA") && el.placeholder && !el.value) check(el, getComputedStyle(el, "::placeholder").color, `placeholder ${el.placeholder}`);
      if (["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName) && el.type !== "hidden" && el.labels.length === 0 && !el.getAttribute("aria-label")) out.push(`no label on ${el.tagName.toLowerCase()}#${el.id}`);
      if ((el.tagName === "BUTTON" || (el.tagName === "A" && el.hasAttribute("href"))) && !(el.getAttribute("aria-label") || el.textContent.trim())) out.push(`no name on ${el.tagName.toLowerCase()}#${el.id}`);
    }
    return out;
  });
  if (bad.length) throw new Error(`${what} view: ${bad.join("; ")}`);
}

let base = "";
const data = await mkdtemp(join(tmpdir(), "batchd-web-e2e-"));
await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
let server = startServer("127.0.0.1:0", data);
let browser;
const pageErrors = [];
let failed = false;
try {
  base = await waitReady(server);
  const userToken = await addUser(data, "alice");
  const adminToken = (await readFile(join(data, "admin.token"), "utf8")).trim();
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
  await text(page, "#set-detail h2", (t) => t === "No task set selected", "empty detail");
  await text(page, "#alerts", (t) => t === "", "the refusal is gone once signed in");
  if (!auth.includes(`Bearer ${userToken}`)) throw new Error(`the calls do not carry the token: ${JSON.stringify(auth.slice(-5))}`);
  // The token stays in the tab's sessionStorage: a reload keeps the session.
  await page.reload();
  await text(page, "#set-detail h2", (t) => t === "No task set selected", "empty detail after a reload");
  await text(page, "#whoami", (t) => t === "Signed in as alice (user)", "the account line after a reload");
  if (!(await page.locator("#signin").isHidden())) throw new Error("a reload asks for the token again");

  step("keyboard: Tab reaches the skip link, the sections, sign-out and every field of the form, each with a focus outline");
  // With no set yet, the disclose form is open.
  await page.locator("#disclose[open]").waitFor();
  await tabTour(
    page,
    [
      "Skip to content",
      "Task sets",
      "Bill",
      "Cluster",
      "Sign out",
      "Disclose a task set",
      "Name",
      "Commands, one per line",
      /^Estimated run time/,
      /Request them all now/,
      /No speculative copies/,
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
  await page.getByLabel("Commands, one per line").fill("echo result-zero\nsleep 120; echo result-one\nsleep 120; echo result-two");
  await page.getByLabel(/Estimated run time/).fill("1s");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await page.waitForURL(/#\/sets\/\d+$/);
  const setA = page.url().replace(/.*#\/sets\//, "");
  await count(page, "#tasks tbody tr[data-index]", 3, "three task rows");
  await text(page, "#live-status", (t) => t === "Live", "the watch stream is live");
  await text(page, "#detail-h", (t) => t.startsWith("e2e frames"), "set title");
  await text(page, "#notice", (t, id) => t.startsWith(`Disclosed 3 tasks as set #${id}.`), "the disclose is announced", setA);
  await text(page, `#set-list a[data-set="${setA}"]`, (t) => t.includes("e2e frames"), "the new set is in the list");
  if ((await page.getByLabel("Commands, one per line").inputValue()) !== "") throw new Error("the form still holds the disclosed commands");
  for (const i of [1, 2]) await text(page, `tr[data-index="${i}"] [data-col="copies"]`, (t) => /running/.test(t), `task ${i} runs while disclosed`);
  await fits(page, "disclosed set");

  step("keyboard: from the set's heading, Tab reaches its actions, the table's tools and each task's buttons");
  await page.locator("#detail-h").focus();
  for (const want of ["request-all", "cancel-rest", "f-state", "f-text", "f-sort", "next-running", "next-failed"]) {
    await page.keyboard.press("Tab");
    const id = await page.evaluate(() => document.activeElement?.id);
    if (id !== want) throw new Error(`Tab from the heading lands on ${JSON.stringify(id)}, want #${want}`);
  }
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
  await a11y(page, "task set");

  step("disclose a second set: it waits for a slot");
  await openForm(page);
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
  if ((await page.getByLabel("Name").inputValue()) !== "e2e third") throw new Error("the form lost the refused input when the view changed");
  if ((await page.getByLabel("Commands, one per line").inputValue()) !== "echo third") throw new Error("the form lost the refused commands when the view changed");
  await page.getByRole("button", { name: "Disclose", exact: true }).click();
  await text(page, "#detail-h", (t) => t.startsWith("e2e third"), "the third set, disclosed on the second try");
  await text(page, "#alerts", (t) => t === "", "no error");
  await count(page, "#set-list a[data-set]", 3, "three sets, none twice");

  step("the second set gets a speculative copy, marked as such; cancel the rest of it with the keyboard");
  await openSet(setB, "e2e straggler");
  await text(page, 'tr[data-index="0"] .copy.speculative', (t) => /^spec \S+\/\d+ running/.test(t), "a running copy marked spec");
  await count(page, 'tr[data-index="0"] .copy', 2, "two copies of the straggler");
  await text(page, 'tr[data-index="0"] .copy:not(.speculative)', (t) => !/spec/i.test(t), "the original is not marked");
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
