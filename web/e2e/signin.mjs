// Browser test of the sign-in flow, against the page's stand-in server
// (scripts/mock-server.ts) started with a required token, because
// `batchd serve` has no authentication yet (issue 6). When it has, this
// belongs in run.mjs against the real server.
//
//   npm run e2e:signin
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const chromiumPath = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const timeout = Number(process.env.E2E_STEP_TIMEOUT_MS || 20000);
const token = "s3cret-token";

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

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

const bundle = join(root, "test", ".build", "mock-server.mjs");
await esbuild.build({ absWorkingDir: root, entryPoints: ["scripts/mock-server.ts"], bundle: true, platform: "node", format: "esm", target: "node20", outfile: bundle, logLevel: "warning" });
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const mock = spawn(process.execPath, [bundle, root], { env: { ...process.env, MOCK_PORT: String(port), MOCK_TOKEN: token }, stdio: ["ignore", "pipe", "inherit"] });
await new Promise((res, rej) => {
  mock.stdout.on("data", (b) => String(b).includes("mock batchd on") && res());
  mock.once("exit", (c) => rej(new Error(`mock server exited (${c})`)));
});

let browser;
let failed = false;
try {
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.setDefaultTimeout(timeout);
  const auth = [];
  page.on("request", (r) => r.url().includes("/batch.v1.") && auth.push(r.headers()["authorization"] ?? null));

  console.log("e2e signin: the token field appears only when the server asks for it");
  await page.goto(base + "/");
  await page.locator("#signin").waitFor({ state: "visible" });
  check((await page.evaluate(() => document.activeElement?.id)) === "token", "the token field has focus");
  await page.locator("#alerts .problem[data-code]").waitFor();
  check((await page.locator("#alerts").textContent()).includes("sign in"), "the error says to sign in");
  check(auth.length > 0 && auth.every((a) => a === null), `no Authorization header before signing in: ${JSON.stringify(auth)}`);

  console.log("e2e signin: a wrong token keeps the form up");
  await page.getByLabel("Token").fill("wrong");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !document.getElementById("signin").hidden && document.querySelector("#alerts .problem"));
  check((await page.evaluate(() => sessionStorage.getItem("batchd.token"))) === "wrong", "the token is kept in sessionStorage");

  console.log("e2e signin: the right token signs in and is sent as a bearer token");
  auth.length = 0;
  await page.getByLabel("Token").fill(token);
  await page.keyboard.press("Enter");
  await page.locator("#signin").waitFor({ state: "hidden" });
  await page.waitForFunction(() => document.getElementById("account").textContent.includes("Signed in"));
  await page.waitForFunction(() => document.querySelector("aside .muted")?.textContent.includes("None yet"));
  check((await page.locator("#alerts").textContent()) === "", "no error once signed in");
  check(auth.includes(`Bearer ${token}`), `the calls carry the token: ${JSON.stringify(auth)}`);

  console.log("e2e signin: the token survives a reload of the tab, and sign out forgets it");
  await page.reload();
  await page.waitForFunction(() => document.querySelector("aside .muted")?.textContent.includes("None yet"));
  check(await page.locator("#signin").isHidden(), "still signed in after a reload");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("#signin").waitFor({ state: "visible" });
  check((await page.evaluate(() => sessionStorage.getItem("batchd.token"))) === null, "sign out clears the token");
  console.log("e2e signin: ok");
} catch (e) {
  failed = true;
  console.error(`e2e signin: FAILED: ${e?.stack || e}`);
} finally {
  await browser?.close().catch(() => {});
  mock.kill("SIGTERM");
}
process.exit(failed ? 1 : 0);
