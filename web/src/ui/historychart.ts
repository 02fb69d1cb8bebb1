// The charts over time of the cluster or of one set: queued tasks, running
// copies and throughput over the last hour, from the server's samples
// (GetHistory), redrawn every ten seconds. One small chart per series,
// with its labels in HTML so that they stay legible at phone width.

import { fmtAgo, fmtValue, historySeries, historySummary, linePoints } from "../history";
import type { Ctx } from "./context";
import { h, replace, s } from "./dom";

const W = 360;
const H = 56;

/** historyCard is a card with the charts of the cluster (setId 0n) or of a set. */
export function historyCard(ctx: Ctx, setId: bigint): HTMLElement {
  const id = setId === 0n ? "history" : "set-history";
  const charts = h("div", { class: "history-charts" });
  const summary = h("p", { class: "sr-only", id: `${id}-summary` });
  const note = h("p", { class: "muted since" });
  const card = h(
    "section",
    { class: "card history", id, "aria-labelledby": `${id}-h` },
    h("h2", { id: `${id}-h` }, setId === 0n ? "The last hour" : "This set over the last hour"),
    summary,
    charts,
    note,
  );
  async function load(): Promise<void> {
    try {
      const r = await ctx.clients.cluster.getHistory({ setId }, { signal: ctx.signal });
      const series = historySeries(r.samples, r.intervalSeconds, setId !== 0n);
      summary.textContent = historySummary(series);
      note.textContent =
        r.samples.length === 0
          ? "No samples yet: the server takes one every 10 seconds and keeps an hour (a restart starts afresh)."
          : `Sampled every ${r.intervalSeconds} s; throughput is ${setId === 0n ? "requested tasks finished" : "tasks that came to need no more runs (executed, finished or canceled)"} per minute.`;
      replace(
        charts,
        series.map((x) =>
          h(
            "figure",
            { class: `hchart hchart-${x.key}`, "data-series": x.key, "aria-hidden": "true" },
            h(
              "figcaption",
              null,
              h("span", { class: "hchart-label" }, x.label),
              h("span", { class: "hchart-now" }, `${fmtValue(x.last)} ${x.unit} now`),
            ),
            h(
              "div",
              { class: "hchart-plot" },
              s(
                "svg",
                { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", class: "hchart-svg" },
                s("line", { x1: 0, y1: H, x2: W, y2: H, class: "hchart-axis" }),
                x.points.length > 0 ? s("polyline", { points: linePoints(x, W, H), class: "hchart-line" }) : null,
              ),
              h("span", { class: "hchart-max" }, `max ${fmtValue(x.max)}`),
            ),
            h("div", { class: "hchart-time" }, h("span", null, fmtAgo(x.window)), h("span", null, "now")),
          ),
        ),
      );
    } catch (err) {
      note.textContent = "Could not read the history.";
      void err;
    }
  }
  void load();
  const timer = setInterval(() => void load(), 10_000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
  return card;
}
