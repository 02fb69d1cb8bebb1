// The head of a watched set: its title and owner, the live status of the
// watch, the counts by state and the stacked bar, the summary, and the
// set's own actions (request all, retry failed, cancel the rest) with the
// dialogs that ask before acting on more than one task.

import { fmtCount, fmtDuration, fmtQty, nbsp, plural } from "../../format";
import { requestBill, requestCostText } from "../../requestcost";
import { routeText } from "../../setroute";
import { restCount, retryCount, stateSegments } from "../../state";
import { stopText } from "../../stop";
import { h, isDisabled, replace, setDisabled, timeAt } from "../dom";
import type { SetCtx } from "./context";

/** Header is the head of one set's view. */
export interface Header {
  /** top are the elements above the table's tools, in order. */
  readonly top: HTMLElement[];
  /** dialogs are the confirmations, placed last. */
  readonly dialogs: HTMLElement[];
  /** title is the set's heading: the focus goes there when its row scrolls away. */
  readonly title: HTMLElement;
  /** status shows the watch's status text, with the class that colours it. */
  status(text: string, cls: string): void;
  /** draw draws again what changed in the title, the counts, the bar and the actions. */
  draw(): void;
}

/** mountHeader makes the head of one set. */
export function mountHeader(sc: SetCtx): Header {
  const { ctx, setId, view } = sc;
  let pendingHead = false; // a request-all or cancel-the-rest call is under way
  const title = h("h2", { id: "detail-h", tabindex: -1 }, `Task set #${setId}`);
  const sub = h("p", { class: "muted" });
  const live = h("p", { class: "live-status connecting", role: "status", id: "live-status" }, "Connecting…");
  const bar = h("div", { class: "state-bar", id: "state-bar", "aria-hidden": "true" });
  const counts = h("ul", { class: "counts", "aria-label": "Tasks by state" });
  const summary = h("p", { class: "summary" });
  const stopEl = h("p", { class: "summary muted", id: "stop-rule" });
  const requestAll = h("button", { type: "button", id: "request-all", "aria-disabled": "true" }, "Request all");
  const cancelRest = h("button", { type: "button", id: "cancel-rest", class: "danger", "aria-disabled": "true" }, "Cancel the rest");
  const retryFailed = h(
    "button",
    { type: "button", id: "retry-failed", "aria-disabled": "true", title: "Run failed, timed-out and canceled tasks again in place: same index, next attempt" },
    "Retry failed",
  );
  const confirmCount = h("strong");
  const confirmYes = h("button", { type: "submit", value: "yes", class: "danger", id: "confirm-yes" });
  const confirmNo = h("button", { type: "submit", value: "no", id: "confirm-no", autofocus: true }, "Keep them");
  const confirm = h(
    "dialog",
    { id: "confirm-cancel", "aria-labelledby": "confirm-h" },
    h(
      "form",
      { method: "dialog" },
      h("h3", { id: "confirm-h" }, "Cancel ", confirmCount, " unrequested tasks?"),
      h("p", null, `They are the disclosed and executed tasks of set #${setId}. They will not run again and are not billed; requested and finished tasks are not touched. This cannot be undone.`),
      h("div", { class: "form-actions" }, confirmYes, confirmNo),
    ),
  );
  const requestCountEl = h("strong", { id: "request-count" });
  const requestCost = h("p", { id: "request-cost" });
  const requestYes = h("button", { type: "submit", value: "yes", id: "request-yes" });
  const requestNo = h("button", { type: "submit", value: "no", id: "request-no", autofocus: true }, "Cancel");
  const confirmRequest = h(
    "dialog",
    { id: "confirm-request", "aria-labelledby": "request-h", "aria-describedby": "request-cost" },
    h(
      "form",
      { method: "dialog" },
      h("h3", { id: "request-h" }, "Request ", requestCountEl, " tasks?"),
      requestCost,
      h("p", { class: "muted" }, "Cancel leaves every task unrequested."),
      h("div", { class: "form-actions" }, requestYes, requestNo),
    ),
  );
  const retryCountEl = h("strong");
  const retryYes = h("button", { type: "submit", value: "yes", id: "retry-yes" });
  const retryNo = h("button", { type: "submit", value: "no", id: "retry-no", autofocus: true }, "Not now");
  const confirmRetry = h(
    "dialog",
    { id: "confirm-retry", "aria-labelledby": "retry-h" },
    h(
      "form",
      { method: "dialog" },
      h("h3", { id: "retry-h" }, "Retry ", retryCountEl, " tasks?"),
      h(
        "p",
        null,
        `They are the failed, timed-out and canceled tasks of set #${setId}. Each runs again in place, as its next attempt, with the same index; ` +
          "a requested task is requested again and billed once more when it finishes. Earlier attempts and their outputs are kept.",
      ),
      h("div", { class: "form-actions" }, retryYes, retryNo),
    ),
  );

  // The head is drawn once; later frames change only the texts and widths that changed.
  const countKeys = ["finished", "requested", "executed", "disclosed", "canceled", "running", "failed"] as const;
  const countItems = new Map(countKeys.map((k) => [k, h("li", { class: `badge ${k === "failed" ? "failed" : `state-${k}`}`, "data-count": k, hidden: true })]));
  bar.hidden = true; // until the set's counts are known
  const barSegs = new Map(stateSegments(undefined).map((g) => [g.key, h("span", { class: `seg seg-${g.key}` })]));
  replace(counts, [...countItems.values()]);
  replace(bar, [...barSegs.values()]);
  const setText = (el: HTMLElement, text: string) => {
    if (el.textContent !== text) el.textContent = text;
  };
  let titleKey = "";

  /** drawHead draws again what changed in the title, the counts, the bar and the set's actions. */
  function drawHead(): void {
    const ts = view.set;
    const blocked = !sc.loaded || sc.stopped;
    if (!ts || blocked) {
      setDisabled(cancelRest, true);
      setDisabled(requestAll, true);
      setDisabled(retryFailed, true);
      if (!ts) return;
    }
    const c = ts.counts;
    const rest = restCount(view);
    const tk = `${ts.id}\t${ts.name}\t${ts.owner}`;
    if (tk !== titleKey) {
      titleKey = tk;
      title.textContent = `${ts.name || "(unnamed)"} `;
      title.append(h("span", { class: "muted" }, `#${ts.id}`));
      sub.replaceChildren(`${ts.owner ? `Owner ${ts.owner} · ` : ""}created `, timeAt(ts.createdAt));
    }
    bar.hidden = !c;
    for (const g of stateSegments(c)) {
      const el = barSegs.get(g.key)!;
      const w = `${(g.fraction * 100).toFixed(3)}%`;
      if (el.style.width !== w) el.style.width = w;
      el.hidden = g.n === 0;
    }
    const n: Record<(typeof countKeys)[number], bigint | number> = {
      // A failed task is finished, but never counted as such: it has a count of its own.
      finished: (c?.finished ?? 0n) - BigInt(view.failed),
      requested: c?.requested ?? 0n,
      executed: c?.executed ?? 0n,
      disclosed: c?.disclosed ?? 0n,
      canceled: c?.canceled ?? 0n,
      running: c?.running ?? 0n,
      failed: view.failed,
    };
    for (const [k, li] of countItems) {
      setText(li, `${fmtCount(n[k])} ${k}`);
      li.hidden = !c || (k === "failed" && view.failed === 0);
    }
    setText(
      summary,
      `${plural(c?.total ?? 0n, "task")} · mean visible response ${c && c.finished > 0n ? nbsp(fmtDuration(ts.meanVisibleResponseSeconds)) : "—"}` +
        ` · billed ${fmtQty(ts.billedSlotSeconds, "slot-seconds")}` +
        (routeText(ts) ? ` · ${routeText(ts)}` : ""),
    );
    const stop = stopText(ts);
    setText(stopEl, stop);
    stopEl.hidden = stop === "";
    setText(cancelRest, rest > 0 ? `Cancel the rest (${fmtCount(rest)})` : "Cancel the rest");
    setDisabled(cancelRest, rest === 0 || pendingHead || blocked);
    setDisabled(requestAll, rest === 0 || pendingHead || blocked);
    const again = retryCount(view);
    setText(retryFailed, again > 0 ? `Retry failed (${fmtCount(again)})` : "Retry failed");
    setDisabled(retryFailed, again === 0 || pendingHead || blocked);
  }

  requestAll.addEventListener("click", () => {
    if (isDisabled(requestAll)) return;
    // Requesting bills: it always asks first, with the count and what the estimates imply.
    const b = requestBill(view.tasks.values());
    requestCountEl.textContent = fmtCount(b.tasks);
    requestYes.textContent = `Request ${plural(b.tasks, "task")}`;
    requestCost.textContent = requestCostText(b);
    confirmRequest.returnValue = "";
    confirmRequest.showModal();
  });
  confirmRequest.addEventListener("close", () => {
    if (confirmRequest.returnValue === "yes") void requestTheRest();
  });

  async function requestTheRest(): Promise<void> {
    pendingHead = true;
    drawHead();
    try {
      const r = await ctx.clients.tasks.request({ setId, all: true }, { signal: ctx.signal });
      ctx.clearProblem();
      ctx.notify(`Requested ${plural(r.requested, "task")} of set #${setId}; ${r.finishedAtOnce} had already run.`);
    } catch (err) {
      ctx.fail(err, "Requesting all tasks");
    } finally {
      pendingHead = false;
      drawHead();
    }
  }

  async function retryTheFailed(): Promise<void> {
    pendingHead = true;
    drawHead();
    try {
      const r = await ctx.clients.tasks.retry({ setId, all: true }, { signal: ctx.signal });
      ctx.clearProblem();
      ctx.notify(`Retrying ${plural(r.retried.length, "task")} of set #${setId} in place, each as its next attempt.`);
    } catch (err) {
      ctx.fail(err, "Retrying the failed tasks");
    } finally {
      pendingHead = false;
      drawHead();
    }
  }
  retryFailed.addEventListener("click", () => {
    if (isDisabled(retryFailed)) return;
    const n = retryCount(view);
    // One task is one click, as its own Retry button; more ask first, and say how many.
    if (n <= 1) {
      void retryTheFailed();
      return;
    }
    retryCountEl.textContent = fmtCount(n);
    retryYes.textContent = `Retry ${fmtCount(n)} tasks`;
    confirmRetry.returnValue = "";
    confirmRetry.showModal();
  });
  confirmRetry.addEventListener("close", () => {
    if (confirmRetry.returnValue === "yes") void retryTheFailed();
  });

  async function cancelTheRest(): Promise<void> {
    pendingHead = true;
    drawHead();
    try {
      const r = await ctx.clients.tasks.cancel({ setId, all: true }, { signal: ctx.signal });
      ctx.clearProblem();
      ctx.notify(`Canceled ${plural(r.canceled, "unrequested task")} of set #${setId}; ${r.canceled === 1 ? "it" : "they"} will not be billed.`);
    } catch (err) {
      ctx.fail(err, "Canceling the rest of the set");
    } finally {
      pendingHead = false;
      drawHead();
    }
  }
  cancelRest.addEventListener("click", () => {
    if (isDisabled(cancelRest)) return;
    const rest = restCount(view);
    // One task is one click, as its own Cancel button; more ask first, and say how many.
    if (rest <= 1) {
      void cancelTheRest();
      return;
    }
    confirmCount.textContent = fmtCount(rest);
    confirmYes.textContent = `Cancel ${fmtCount(rest)} tasks`;
    confirm.returnValue = "";
    confirm.showModal();
  });
  confirm.addEventListener("close", () => {
    // The dialog gives the focus back to "Cancel the rest" by itself.
    if (confirm.returnValue === "yes") void cancelTheRest();
  });

  return {
    top: [
      h("header", { class: "detail-head" }, h("div", { class: "detail-title" }, title, sub), live),
      bar,
      counts,
      summary,
      stopEl,
      h("div", { class: "actions" }, requestAll, retryFailed, cancelRest),
    ],
    dialogs: [confirm, confirmRetry, confirmRequest],
    title,
    status(text, cls) {
      live.textContent = text;
      live.className = `live-status ${cls}`;
    },
    draw: drawHead,
  };
}
