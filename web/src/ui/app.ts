// The page shell: header, navigation, sign-in, errors and routing.

import type { Clients, TokenStore } from "../api";
import { describeError, isAbort } from "../errors";
import type { Problem } from "../errors";
import { parseRoute } from "../route";
import type { Route } from "../route";
import { mountBill } from "./bill";
import { mountCluster } from "./cluster";
import type { Ctx } from "./context";
import { byId, h, replace } from "./dom";
import { mountSets } from "./sets";

/** startApp wires the page's skeleton (index.html) to the clients and shows the route in location.hash. */
export function startApp(clients: Clients, tokens: TokenStore): void {
  const main = byId("main");
  const alerts = byId("alerts");
  const notice = byId("notice");
  const signin = byId("signin");
  const signinForm = byId<HTMLFormElement>("signin-form");
  const tokenInput = byId<HTMLInputElement>("token");
  const account = byId("account");
  let current: AbortController | undefined;

  function showProblem(p: Problem): void {
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

  function clearProblem(): void {
    alerts.replaceChildren();
  }

  function showSignIn(): void {
    if (!signin.hidden) return;
    signin.hidden = false;
    tokenInput.focus();
  }

  function renderAccount(): void {
    if (tokens.get() === "") {
      account.replaceChildren();
      return;
    }
    replace(
      account,
      h("span", { class: "muted" }, "Signed in"),
      h(
        "button",
        {
          type: "button",
          class: "link",
          onclick: () => {
            tokens.set("");
            renderAccount();
            show(parseRoute(location.hash));
          },
        },
        "Sign out",
      ),
    );
  }

  signinForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const t = tokenInput.value.trim();
    if (t === "") {
      tokenInput.setAttribute("aria-invalid", "true");
      tokenInput.focus();
      return;
    }
    tokenInput.removeAttribute("aria-invalid");
    tokens.set(t);
    tokenInput.value = "";
    signin.hidden = true;
    clearProblem();
    renderAccount();
    notify("Signed in.");
    show(parseRoute(location.hash));
  });

  let noticeTimer: ReturnType<typeof setTimeout> | undefined;
  let noticeAt = 0;
  function notify(message: string): void {
    notice.textContent = message;
    noticeAt = Date.now();
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => (notice.textContent = ""), 8000);
  }

  function show(route: Route): void {
    current?.abort();
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
        showProblem(describeError(err, action));
      },
      problem: (p) => {
        if (!ac.signal.aborted) showProblem(p);
      },
      notify,
      clearProblem,
      now: () => Date.now() / 1000,
    };
    main.replaceChildren();
    if (route.view === "bill") mountBill(main, ctx);
    else if (route.view === "cluster") mountCluster(main, ctx);
    else mountSets(main, ctx, route.setId);
    document.title = route.view === "sets" ? "batchd · task sets" : `batchd · ${route.view}`;
  }

  window.addEventListener("hashchange", () => {
    clearProblem();
    // A notice belongs to the view it was given in, unless it led here
    // (a disclose moves to its new set).
    if (Date.now() - noticeAt > 1000) notice.textContent = "";
    show(parseRoute(location.hash));
    // Move focus to the new view's heading, as a page load would, so keyboard
    // and screen reader users land where the content changed.
    main.querySelector<HTMLElement>("h2[tabindex]")?.focus({ preventScroll: true });
  });
  renderAccount();
  show(parseRoute(location.hash));
}
