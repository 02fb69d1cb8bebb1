// Helpers shared by the browser tests (run.mjs, sizes.mjs): a real batchd
// started on a loopback port, Debian's Chromium, and checks of what the
// page shows.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { resolve } from "node:path";

// npm runs scripts in web/; a relative BATCHD_BIN means relative to where npm was started.
export const bin = process.env.BATCHD_BIN ? resolve(process.env.INIT_CWD || process.cwd(), process.env.BATCHD_BIN) : "";
export const chromiumPath = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
// A bound on a hang, not a measurement: a loaded CI machine stays far inside it.
export const stepTimeout = Number(process.env.E2E_STEP_TIMEOUT_MS || 120000);

/** needBin exits with a usage message when BATCHD_BIN is not set. */
export function needBin() {
  if (!bin) {
    console.error("e2e: set BATCHD_BIN to a built batchd binary (go build -o bin/batchd ./cmd/batchd)");
    process.exit(2);
  }
}

/** launch starts a headless Chromium. */
export function launch() {
  return chromium.launch({
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
}

let log = "";
/** serverLog is the tail of what the batchd processes printed. */
export function serverLog() {
  return log;
}
// startServer starts batchd on listen ("127.0.0.1:0": a port the kernel
// picks, learnt from the "serving on" line; a restart passes that address).
export function startServer(listen, data, flags = ["--slots", "2", "--max-open-sets", "2"]) {
  const p = spawn(bin, ["serve", "--listen", listen, "--data", data, ...flags], {
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
export async function waitReady(proc) {
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

export async function stop(proc, signal = "SIGTERM") {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill(signal);
  const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  await proc.exited;
  clearTimeout(t);
}

export function step(name) {
  console.log(`e2e: ${name}`);
}

/**
 * text waits until the element's trimmed text satisfies pred, and returns
 * it. pred runs in the page, so it sees only its arguments: (text, arg).
 */
export async function text(page, selector, pred, what, arg) {
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

export async function count(page, selector, n, what) {
  try {
    await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n, [selector, n], { timeout: stepTimeout });
  } catch {
    const got = await page.locator(selector).count();
    throw new Error(`${what}: ${got} × ${selector}, want ${n}`);
  }
}

/** openForm opens the disclose form: in the wide pane while no set is open ("+ New set" leaves an open one). */
export async function openForm(page) {
  // The view may still be drawing after a navigation: wait until it shows
  // either the form or the button that opens it, then look which.
  await page.locator("#disclose, #new-set").first().waitFor();
  if ((await page.locator("#disclose").count()) === 0) await page.locator("#new-set").click();
  await page.locator("#disclose").waitFor();
  if (!(await page.locator("#disclose").evaluate((d) => d.open))) await page.locator("#disclose summary").click();
  await page.getByLabel("Name").waitFor();
}

/** fits fails when the page or a table is wider than the 1280×800 window. */
export async function fits(page, what) {
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
export function addUser(data, name) {
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
export async function tabTour(page, want, what) {
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
export async function a11y(page, what) {
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
