// The cluster view: workers and slots, queues, load, β, copies and free work.

import { timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { freeParts } from "../free";
import { fmtClock, fmtDuration, fmtNumber, fmtPercent } from "../format";
import type { GetClusterResponse } from "../gen/batch/v1/cluster_pb";
import type { Ctx } from "./context";
import { h, replace, timeAt } from "./dom";
import { historyCard } from "./historychart";

/** mountCluster draws the cluster into root and refreshes it every two seconds while shown. */
export function mountCluster(root: HTMLElement, ctx: Ctx): void {
  const stats = h("div", { class: "stats", id: "cluster-stats" }, h("p", { class: "muted" }, "Loading…"));
  // Not a live region: it changes every two seconds. A failure is announced
  // through the page's alert instead.
  const updated = h("p", { class: "muted", id: "cluster-updated" });
  const since = h("p", { class: "muted since", id: "cluster-since" });
  const workers = h("tbody");
  const pilots = h("tbody");
  const pools = h("div", { id: "pools" });
  const users = h("tbody");
  const fairNote = h("p", { class: "muted", id: "fair-note" });
  root.append(
    h(
      "section",
      { class: "card", "aria-labelledby": "cluster-h" },
      h("div", { class: "detail-head" }, h("h2", { id: "cluster-h", tabindex: -1 }, "Cluster"), updated),
      since,
      stats,
    ),
    historyCard(ctx, 0n),
    h(
      "section",
      { class: "card", "aria-labelledby": "workers-h" },
      h("h2", { id: "workers-h" }, "Workers"),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "workers" },
          h("caption", { class: "sr-only" }, "Workers and their slots"),
          h(
            "thead",
            null,
            h("tr", null, ["Name", "Host", "Slots", "Busy", "Suspend", "State", "Last heartbeat"].map((c) => h("th", { scope: "col" }, c))),
          ),
          workers,
        ),
      ),
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "users-h" },
      h("h2", { id: "users-h" }, "Fair share"),
      fairNote,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "users" },
          h("caption", { class: "sr-only" }, "Each user's fair share of the slots for requested work"),
          h(
            "thead",
            null,
            h("tr", null, ["User", "Weight", "Slots held", "Queued", "Share", "Usage (decayed)"].map((c) => h("th", { scope: "col" }, c))),
          ),
          users,
        ),
      ),
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "pilots-h" },
      h("h2", { id: "pilots-h" }, "Pilots"),
      pools,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { id: "pilots" },
          h("caption", { class: "sr-only" }, "Pilot jobs of the elastic pools"),
          h(
            "thead",
            null,
            h("tr", null, ["Pool", "Job", "State", "Reason", "Node", "Slots", "Age", "Worker"].map((c) => h("th", { scope: "col" }, c))),
          ),
          pilots,
        ),
      ),
    ),
  );

  let failing = false;
  async function load(): Promise<void> {
    try {
      const r = await ctx.clients.cluster.getCluster({}, { signal: ctx.signal });
      draw(r);
      updated.replaceChildren("Updated ", timeAt(timestampNow()));
      if (failing) ctx.clearProblem();
      failing = false;
    } catch (err) {
      updated.textContent = "Not updating: see the message above.";
      if (!failing) ctx.fail(err, "Reading the cluster");
      failing = true;
    }
  }

  function draw(r: GetClusterResponse): void {
    const q = r.queues;
    const m = r.metrics;
    since.textContent = `Load, β, finished tasks, speculative copies and free work are counted since the server started (${fmtClock(r.startedAt)}).`;
    const stat = (k: string, label: string, value: string, note?: string) =>
      h("div", { class: "stat", "data-stat": k }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), note ? h("div", { class: "muted" }, note) : null);
    replace(
      stats,
      stat("slots", "Busy slots", `${r.busySlots} / ${r.slots}`, `${r.workers.length} worker${r.workers.length === 1 ? "" : "s"}`),
      stat("load", "Load", fmtPercent(m?.load ?? 0), "busy slot-seconds / slot-seconds"),
      stat("requested", "Requested queue", String(q?.requested ?? 0n), "SRPT, runs first"),
      stat("disclosed", "Disclosed queue", String(q?.disclosed ?? 0n), "FCFS, fills idle slots"),
      stat("copies", "Copies", `${q?.runningCopies ?? 0n} running`, `${q?.speculativeCopies ?? 0n} speculative · ${q?.suspendedCopies ?? 0n} suspended`),
      stat("beta", "β (Pareto shape)", m ? fmtNumber(m.beta) : "—", `${m?.betaSamples ?? 0n} samples`),
      stat("spec", "Speculative copies", `${m?.speculativeCopiesWon ?? 0n} won / ${m?.speculativeCopiesStarted ?? 0n}`),
      stat("free", "Free work", `${fmtNumber(m?.freeSlotSeconds ?? 0)} slot-s`, `billed ${fmtNumber(m?.billedSlotSeconds ?? 0)} slot-s`),
      freeParts(m?.free).map((p) => stat(p.key, `Free: ${p.label}`, `${fmtNumber(p.slotSeconds)} slot-s`)),
      stat("finished", "Finished tasks", String(m?.finishedTasks ?? 0n), `${fmtNumber(m?.tasksPerHour ?? 0, 1)} per hour`),
      stat("response", "Mean visible response", m && m.finishedTasks > 0n ? fmtDuration(m.meanVisibleResponseSeconds) : "—", `slowdown ${fmtNumber(m?.meanVisibleSlowdown ?? 0)}`),
      stat("policy", "Policy", r.policy || "—", [r.speculation, r.preemption ? `preemption ${r.preemption}` : ""].filter(Boolean).join(" · ")),
      stat("version", "Server", r.version || "—", `since ${fmtClock(r.startedAt)}`),
    );
    replace(
      workers,
      r.workers.length === 0
        ? h("tr", null, h("td", { colspan: 7, class: "muted" }, "No workers registered."))
        : r.workers.map((w) =>
            h(
              "tr",
              { "data-worker": w.id },
              h("td", null, w.name || w.id),
              h("td", null, w.hostname),
              h("td", { class: "num" }, w.slots),
              h("td", { class: "num" }, w.busySlots),
              h("td", null, w.canSuspend ? "yes" : "no (kills)"),
              h("td", null, h("span", { class: `badge worker-${w.state}` }, w.state || "?")),
              h("td", null, fmtClock(w.lastHeartbeat)),
            ),
          ),
    );
    replace(
      pools,
      r.pools.map((p) =>
        h("p", { class: p.lastError ? "field-error" : "muted", "data-pool": p.name }, `Pool ${p.name} (${p.engine})${p.lastError ? ` backing off: ${p.lastError}` : ""}`),
      ),
    );
    fairNote.textContent = r.fairShare
      ? "While several users have requested work queued, slots go to them in proportion to their weights; between users holding as many, one who has used much more waits, and the rest go shortest work first."
      : "Off: requested work runs shortest first across all users.";
    replace(
      users,
      r.users.length === 0
        ? h("tr", null, h("td", { colspan: 6, class: "muted" }, "No user has requested work or usage on record."))
        : r.users.map((u) =>
            h(
              "tr",
              { "data-user": u.name },
              h("td", null, u.name),
              h("td", { class: "num" }, fmtNumber(u.weight)),
              h("td", { class: "num" }, u.held),
              h("td", { class: "num" }, u.queued),
              h("td", { class: "num" }, fmtNumber(u.share)),
              h("td", { class: "num" }, `${fmtNumber(u.usage)} slot-s`),
            ),
          ),
    );
    const now = Date.now();
    replace(
      pilots,
      r.pilots.length === 0
        ? h("tr", null, h("td", { colspan: 8, class: "muted" }, "No pilots: batchd pool slurm keeps pilot workers in Slurm."))
        : r.pilots.map((p) => {
            const since = p.startedAt ?? p.submittedAt;
            return h(
              "tr",
              { "data-pilot": p.id },
              h("td", null, p.pool),
              h("td", null, p.id),
              h("td", null, h("span", { class: "badge" }, p.state || "?")),
              h("td", null, p.reason || "—"),
              h("td", null, p.node || "—"),
              h("td", { class: "num" }, p.slots),
              h("td", null, since ? fmtDuration(Math.max(0, (now - timestampMs(since)) / 1000)) : "—"),
              h("td", null, p.worker),
            );
          }),
    );
  }

  void load();
  const timer = setInterval(() => void load(), 2000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));
}
