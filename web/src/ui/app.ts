// The page shell: header, navigation, sign-in, errors and routing.

import { Code } from "@connectrpc/connect";
import type { Clients, TokenStore } from "../api";
import { describeError, isAbort } from "../errors";
import type { Problem } from "../errors";
import { parseRoute, sameSet } from "../route";
import type { Route } from "../route";
import { mountBill } from "./bill";
import { mountCluster } from "./cluster";
import type { Ctx } from "./context";
import { byId, h, isDisabled, replace, setDisabled } from "./dom";
import { mountSets } from "./sets";

/** startApp wires the page's skeleton (index.html) to the clients and shows the route in location.hash. */
export function startApp(clients: Clients, tokens: TokenStore): void {
  const main = byId("main");
  const alerts = byId("alerts");
  const notice = byId("notice");
  const signin = byId("signin");
  const signinForm = byId<HTMLFormElement>("signin-form");
  const tokenInput = byId<HTMLInputElement>("token");
  const signinButton = signinForm.querySelector<HTMLButtonElement>("button[type=submit]")!;
  const account = byId("account");
  let current: AbortController | undefined;
  let who = ""; // "alice (user)" once WhoAmI answered for the stored token

  function showProblem(p: Problem): void {
    // A success message beside an error reads as if both were about the same thing.
    clearNotice();
    replace(
      alerts,
      h(
        "div",
        { class: "problem", "data-code": p.code ?? "" },
        h("p", { class: "problem-title" }, p.title),
        p.detail ? h("p", { class: "problem-detail" }, `The server said: ${p.detail}`) : null,
        h("p", { class: "problem-hint" }, p.hint),
        h("button", { type: "button", class: "link", onclick: clearProblem }, "Dismiss"),
      ),
    );
    if (p.signIn) showSignIn();
  }

  /** report shows a view's error; signed out (or never signed in) on a server that needs a token, the sign-in box alone says so. */
  function report(p: Problem): void {
    if (p.signIn && tokens.get() === "") showSignIn();
    else showProblem(p);
  }

  function clearProblem(): void {
    alerts.replaceChildren();
  }

  function showSignIn(): void {
    if (!signin.hidden) return;
    signin.hidden = false;
    tokenInput.focus();
  }

  let leadTimer: ReturnType<typeof setTimeout> | undefined;
  function renderAccount(): void {
    clearTimeout(leadTimer);
    // "Signed in as" fades after a few seconds; the name stays, and screen readers keep the whole line.
    leadTimer = setTimeout(() => account.querySelector(".who-lead")?.classList.add("faded"), 4000);
    if (tokens.get() === "") {
      account.replaceChildren();
      return;
    }
    replace(
      account,
      // On a phone "Signed in as" is left to screen readers: the name is what must fit.
      h("span", { class: "muted", id: "whoami" }, who ? [h("span", { class: "who-lead" }, "Signed in as "), who] : "Signed in"),
      h(
        "button",
        {
          type: "button",
          class: "link",
          onclick: () => {
            tokens.set("");
            who = "";
            renderAccount();
            clearProblem();
            notify("Signed out.");
            show(parseRoute(location.hash));
          },
        },
        "Sign out",
      ),
    );
  }

  /** loadWho names the stored token's user in the header; a failure is left to the views, which say it. */
  async function loadWho(): Promise<void> {
    const t = tokens.get();
    if (t === "") return;
    try {
      const r = await clients.users.whoAmI({});
      if (tokens.get() !== t) return;
      who = `${r.name} (${r.role})`;
      renderAccount();
    } catch {
      // The views show the error (sign in, server down) where it matters.
    }
  }

  // Sign-in checks the token with WhoAmI before keeping it, so a wrong
  // token is refused here, with the server's reason, and never stored.
  signinForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (isDisabled(signinButton)) return;
    const t = tokenInput.value.trim();
    if (t === "") {
      tokenInput.setAttribute("aria-invalid", "true");
      tokenInput.focus();
      return;
    }
    setDisabled(signinButton, true);
    signinButton.textContent = "Signing in…";
    try {
      const r = await clients.users.whoAmI({}, { headers: { Authorization: `Bearer ${t}` } });
      tokenInput.removeAttribute("aria-invalid");
      tokens.set(t);
      who = `${r.name} (${r.role})`;
      tokenInput.value = "";
      signin.hidden = true;
      clearProblem();
      renderAccount();
      notify(`Signed in as ${r.name}.`);
      show(parseRoute(location.hash));
      // The sign-in box is gone with the focus in it: go on where the view starts.
      focusView();
    } catch (err) {
      const p = describeError(err, "Signing in");
      if (p.code === Code.Unauthenticated) {
        p.title = "Signing in: the server refused this token.";
        p.hint = "Check the token and try again, or ask an administrator for a new one.";
      }
      tokenInput.setAttribute("aria-invalid", "true");
      showProblem(p);
      tokenInput.select();
      tokenInput.focus();
    } finally {
      setDisabled(signinButton, false);
      signinButton.textContent = "Sign in";
    }
  });

  let noticeTimer: ReturnType<typeof setTimeout> | undefined;
  let noticeCarries = false;
  /** notify announces a success; carry keeps it across the navigation it leads to (a disclose opens its new set). */
  function notify(message: string, carry = false): void {
    notice.textContent = message;
    noticeCarries = carry;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(clearNotice, 8000);
  }
  function clearNotice(): void {
    notice.textContent = "";
    noticeCarries = false;
  }

  let shown: Route | undefined;
  let routeHeard: ((r: Route) => void) | undefined;
  function show(route: Route): void {
    current?.abort();
    shown = route;
    routeHeard = undefined;
    const ac = new AbortController();
    current = ac;
    for (const a of document.querySelectorAll<HTMLAnchorElement>("nav a")) {
      if (a.dataset.view === route.view) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    const ctx: Ctx = {
      clients,
      signal: ac.signal,
      fail: (err, action) => {
        if (ac.signal.aborted || isAbort(err)) return;
        report(describeError(err, action));
      },
      problem: (p) => {
        if (!ac.signal.aborted) report(p);
      },
      notify,
      clearProblem,
      now: () => Date.now() / 1000,
      onRoute: (fn) => {
        if (!ac.signal.aborted) routeHeard = fn;
      },
    };
    main.replaceChildren();
    if (route.view === "bill") mountBill(main, ctx);
    else if (route.view === "cluster") mountCluster(main, ctx);
    else mountSets(main, ctx, route.setId);
    document.title = route.view === "sets" ? "batchd · task sets" : `batchd · ${route.view}`;
  }

  /**
   * focusView moves the focus to the view's heading (a set's own title when
   * one is open), as a page load would, so that keyboard and screen reader
   * users land where the content changed.
   */
  function focusView(): void {
    const heading = main.querySelector<HTMLElement>("#set-detail h2[tabindex]") ?? main.querySelector<HTMLElement>("h2[tabindex]");
    heading?.focus({ preventScroll: true });
    // Scroll only as far as needed for the heading to be seen (on a phone, a set opened from the list below).
    heading?.scrollIntoView({ block: "nearest" });
  }

  window.addEventListener("hashchange", () => {
    const next = parseRoute(location.hash);
    // Within one set (a task opened or closed, the table's filter): the set's view stays, and its stream.
    if (routeHeard && sameSet(shown, next)) {
      shown = next;
      routeHeard(next);
      return;
    }
    clearProblem();
    // A notice belongs to the view it was given in, unless it led here
    // (a disclose moves to its new set).
    if (noticeCarries) noticeCarries = false;
    else clearNotice();
    show(parseRoute(location.hash));
    focusView();
  });
  renderAccount();
  void loadWho();
  show(parseRoute(location.hash));
}
