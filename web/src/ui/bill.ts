// The bill view: totals, a chart of billed against free work, and the ledger lines.

import { billSegments, chartSummary } from "../chart";
import { freeParts } from "../free";
import { fmtClock, fmtNumber } from "../format";
import type { BillLine, BillTotals } from "../gen/batch/v1/billing_pb";
import type { Ctx } from "./context";
import { h, isDisabled, replace, setDisabled } from "./dom";

/** mountBill draws the caller's bill into root. */
export function mountBill(root: HTMLElement, ctx: Ctx): void {
  const totals = h("div", { class: "bill-grid" }, h("p", { class: "muted" }, "Loading…"));
  const linesBody = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more lines");
  const linesNote = h("p", { class: "muted", id: "bill-lines-note" });
  root.append(
    h(
      "section",
      { class: "card", "aria-labelledby": "bill-h" },
      h("h2", { id: "bill-h", tabindex: -1 }, "Your bill"),
      h(
        "p",
        { class: "muted" },
        "Only requested work is billed: the winning copy of each task you requested. Disclosed work you never requested, canceled work and losing speculative copies are free.",
      ),
      totals,
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "lines-h" },
      h("h2", { id: "lines-h" }, "Bill lines"),
      linesNote,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "bill-lines" },
          h("caption", { class: "sr-only" }, "Bill lines, one per billed task"),
          h(
            "thead",
            null,
            h("tr", null, ["Billed at", "Task set", "Task", "Copy", "Slot-seconds", "CPU seconds", "Amount", "Reason"].map((c) => h("th", { scope: "col" }, c))),
          ),
          linesBody,
        ),
      ),
      more,
    ),
  );

  let token = "";
  async function load(first: boolean): Promise<void> {
    if (isDisabled(more)) return;
    setDisabled(more, true);
    try {
      const r = await ctx.clients.billing.getBill({ includeLines: true, pageSize: 500, pageToken: token }, { signal: ctx.signal });
      if (first) {
        drawTotals(totals, r.totals);
        linesBody.replaceChildren();
      }
      for (const l of r.lines) linesBody.append(lineRow(l));
      const n = linesBody.rows.length;
      linesNote.textContent = n === 0 ? "No bill lines yet." : `${n} line${n === 1 ? "" : "s"}${r.nextPageToken ? " so far" : ""}.`;
      token = r.nextPageToken;
      more.hidden = token === "";
    } catch (err) {
      if (first) replace(totals, h("p", null, "The bill could not be loaded."));
      ctx.fail(err, "Reading your bill");
    } finally {
      setDisabled(more, false);
    }
  }
  more.addEventListener("click", () => void load(false));
  void load(true);
}

function lineRow(l: BillLine): HTMLTableRowElement {
  return h(
    "tr",
    { "data-line": String(l.id) },
    h("td", null, fmtClock(l.billedAt)),
    h("td", null, h("a", { href: `#/sets/${l.setId}` }, l.setName ? `${l.setName} #${l.setId}` : `#${l.setId}`)),
    h("td", { class: "num" }, l.index),
    h("td", { class: "num" }, `#${l.copyId}`),
    h(
      "td",
      { class: "num" },
      fmtNumber(l.slotSeconds),
      l.clamped ? h("div", { class: "muted", title: "The worker reported more than the server saw the copy run; the bill keeps what the server saw." }, `reported ${fmtNumber(l.reportedSlotSeconds)}, cut`) : null,
    ),
    h("td", { class: "num" }, fmtNumber(l.cpuSeconds)),
    h("td", { class: "num" }, fmtNumber(l.amount)),
    h("td", null, l.kind === "correction" ? `correction of line ${l.corrects}: ${l.note}` : l.reason),
  );
}

function drawTotals(el: HTMLElement, t: BillTotals | undefined): void {
  const rows: [string, string, string][] = [
    ["lines", "Billed tasks", String(t?.lines ?? 0n)],
    ["amount", "Amount due", fmtNumber(t?.amount ?? 0)],
    ["billed", "Billed slot-seconds", fmtNumber(t?.billedSlotSeconds ?? 0)],
    ["cpu", "Billed CPU seconds", fmtNumber(t?.billedCpuSeconds ?? 0)],
    ["requested-work", "Requested work, slot-seconds", fmtNumber(t?.requestedWorkSlotSeconds ?? 0)],
    ["scaled", "Scaled billed resources", fmtNumber(t?.scaledBilledResources ?? 0)],
    ["free", "Free slot-seconds", fmtNumber(t?.freeSlotSeconds ?? 0)],
    ...freeParts(t?.free).map((p): [string, string, string] => [p.key, `…of which ${p.label}`, fmtNumber(p.slotSeconds)]),
  ];
  replace(
    el,
    h(
      "table",
      { class: "totals", id: "bill-totals" },
      h("caption", { class: "sr-only" }, "Bill totals"),
      h("tbody", null, rows.map(([k, label, v]) => h("tr", { "data-total": k }, h("th", { scope: "row" }, label), h("td", { class: "num" }, v)))),
    ),
    chart(t),
  );
}

/**
 * chart draws billed against free work as bars of HTML, not SVG: its labels
 * are text at the page's size on any screen (an SVG scaled to a phone's
 * width shrank them to 6 px), and on a narrow screen each label goes above
 * its bar.
 */
function chart(t: BillTotals | undefined): HTMLElement {
  const segs = billSegments(t);
  return h(
    "figure",
    { class: "chart", "aria-labelledby": "chart-title" },
    h("p", { class: "chart-title", id: "chart-title" }, "Billed against free work, slot-seconds"),
    h(
      "ul",
      { class: "chart-rows" },
      segs.map((g) =>
        h(
          "li",
          { class: `seg seg-${g.key}`, "data-fraction": g.fraction.toFixed(4) },
          h("span", { class: "chart-label" }, g.label),
          h(
            "span",
            { class: "chart-track", "aria-hidden": "true" },
            h("span", { class: "chart-bar", style: `width:${g.slotSeconds > 0 ? Math.max(0.5, g.fraction * 100).toFixed(2) : 0}%` }),
          ),
          h("span", { class: "chart-value" }, fmtNumber(g.slotSeconds)),
        ),
      ),
    ),
    h("figcaption", { class: "muted" }, chartSummary(t)),
  );
}
