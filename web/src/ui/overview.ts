// The overview shown in the wide pane while no set is open: the person's
// running, queued and failed sets, and how busy the cluster is.

import { fmtCount, fmtPercent, plural } from "../format";
import { SetState } from "../gen/batch/v1/types_pb";
import type { TaskSet } from "../gen/batch/v1/types_pb";
import type { Ctx } from "./context";
import { h, replace } from "./dom";

/** OverviewFigures are the overview's numbers, summed from the person's sets. */
export interface OverviewFigures {
  runningSets: number;
  runningTasks: bigint;
  queuedSets: number;
  waitingSets: number;
  failedSets: number;
  failedTasks: bigint;
  /** more is true when a listing stopped at its page (the figures are at least these). */
  more: boolean;
}

/** overviewFigures sums open and failed sets into the overview's figures. */
export function overviewFigures(open: TaskSet[], failed: TaskSet[], more: boolean): OverviewFigures {
  const f: OverviewFigures = { runningSets: 0, runningTasks: 0n, queuedSets: 0, waitingSets: 0, failedSets: failed.length, failedTasks: 0n, more };
  for (const s of open) {
    if (s.state === SetState.RUNNING) f.runningSets++;
    else if (s.state === SetState.QUEUED) f.queuedSets++;
    else if (s.state === SetState.WAITING) f.waitingSets++;
    f.runningTasks += s.counts?.running ?? 0n;
  }
  for (const s of failed) f.failedTasks += s.failed;
  return f;
}

/** mountOverview draws the overview into el, refreshed every five seconds; pick filters the list by a state. */
export function mountOverview(el: HTMLElement, ctx: Ctx, pick: (state: string) => void): void {
  const stats = h("div", { class: "stats overview-stats", id: "overview-stats" });
  const note = h("p", { class: "muted since" });
  replace(el, h("section", { class: "overview", "aria-labelledby": "overview-h" }, h("h2", { id: "overview-h" }, "Overview"), stats, note));
  const stat = (k: string, label: string, value: string, sub: string, state?: string) =>
    h(
      "div",
      { class: "stat", "data-stat": k },
      h("div", { class: "stat-label" }, label),
      h("div", { class: "stat-value" }, value),
      h("div", { class: "muted" }, sub),
      state ? h("button", { type: "button", class: "link", onclick: () => pick(state) }, `List ${label.toLowerCase()} sets`) : null,
    );
  async function load(): Promise<void> {
    const opts = { signal: ctx.signal };
    const [open, failed, cluster] = await Promise.all([
      ctx.clients.tasks.listTaskSets({ pageSize: 1000, states: [SetState.WAITING, SetState.QUEUED, SetState.RUNNING] }, opts),
      ctx.clients.tasks.listTaskSets({ pageSize: 1000, states: [SetState.FAILED] }, opts),
      // The cluster's figures are for everyone who may read them; a refusal leaves the sets' figures.
      ctx.clients.cluster.getCluster({}, opts).catch(() => undefined),
    ]);
    const f = overviewFigures(open.taskSets, failed.taskSets, open.nextPageToken !== "" || failed.nextPageToken !== "");
    const at = f.more ? "at least " : "";
    const parts = [
      stat("running", "Running", `${at}${f.runningSets}`, `${plural(f.runningTasks, "task")} running now`, "running"),
      stat("queued", "Queued", `${at}${f.queuedSets + f.waitingSets}`, f.waitingSets > 0 ? `${f.waitingSets} waiting for other sets` : "sets with tasks left to run", "open"),
      stat("failed", "Failed", `${at}${f.failedSets}`, `${plural(f.failedTasks, "task")} failed in them`, "failed"),
    ];
    if (cluster) {
      parts.push(
        stat("load", "Cluster", `${cluster.busySlots} / ${cluster.slots} slots busy`,
          `load ${fmtPercent(cluster.metrics?.load ?? 0)} · ${fmtCount(cluster.queues?.requested ?? 0n)} requested, ${fmtCount(cluster.queues?.disclosed ?? 0n)} disclosed queued`),
      );
    }
    replace(stats, parts);
    note.textContent = "Across your sets; the cluster's slots are everyone's.";
  }
  let failing = false;
  const tick = () =>
    load().then(
      () => (failing = false),
      (err) => {
        // The list beside says what went wrong with the sets; say nothing twice.
        if (!failing) note.textContent = "Could not read the overview.";
        failing = true;
        void err;
      },
    );
  void tick();
  const timer = setInterval(() => void tick(), 5000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
}
