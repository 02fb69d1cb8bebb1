// Why waiting tasks wait: the scheduler's answer for the waiting rows in
// view (one Why call, at most every whyEvery ms while such rows are drawn),
// its short note in a waiting row, and the whole answer for one task in a
// box below the table.

import { fmtAtLeast, fmtEta, taskStateName } from "../../format";
import type { TaskWhy } from "../../gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "../../gen/batch/v1/types_pb";
import type { Task } from "../../gen/batch/v1/types_pb";
import { h, replace } from "../dom";
import type { Rows, SetCtx } from "./context";

/** whyEvery is how often, in ms, the page asks why the waiting tasks in view wait. */
const whyEvery = 5000;

/** isWaiting says whether a task waits for a slot: requested or disclosed, with no copy running. */
export function isWaiting(t: Task): boolean {
  return (t.state === TaskState.REQUESTED || t.state === TaskState.DISCLOSED) && !t.copies.some((c) => c.state === CopyState.RUNNING);
}

/** whyNote is the scheduler's answer for a waiting task: the reason, its place in line and when it should start. */
export function whyNote(w: TaskWhy): HTMLElement | null {
  if (w.reasonText === "" || w.class === "") return null;
  // The column is narrow: the start estimate first, the rest in the tooltip.
  const line: string[] = [w.startInSeconds >= 0 ? `starts ${fmtEta(w.startInSeconds, w.startIsLowerBound)}` : "start unknown", w.reasonText];
  if (w.tasksAhead > 0n) line.push(`${fmtAtLeast(w.tasksAhead, w.tasksAheadExact)} ahead`);
  const detail = [
    line.join(" · "),
    `Class: ${w.class}`,
    `Position in its set: ${fmtAtLeast(w.position, w.positionExact)}; sets ahead: ${fmtAtLeast(w.jobsAhead, w.tasksAheadExact)}`,
    w.finishInSeconds >= 0 || w.pastEstimate ? `Finishes in ${fmtEta(w.finishInSeconds, w.finishIsLowerBound, w.pastEstimate)}` : "",
    w.assumptions ? `Assuming ${w.assumptions}` : "",
  ].filter((x) => x !== "").join("\n");
  return h("button", { type: "button", class: "link why", "data-action": "why", title: detail, "aria-label": `Why task ${w.index} waits: ${line.join(", ")}` }, line.join(" · "));
}

/** WhyPanel is the why box below the table and the answers the waiting rows show. */
export interface WhyPanel {
  /** el is the box below the table. */
  readonly el: HTMLElement;
  /** answer is the scheduler's last answer for task i. */
  answer(i: number): TaskWhy | undefined;
  /** follow is told after each drawing of the rows whether one waits: it asks while one does. */
  follow(waiting: boolean): void;
  /** show opens the whole answer for one task and asks again now. */
  show(index: number): void;
  /** redraw draws the open answer again (its task may have changed), if one is open. */
  redraw(): void;
}

/** mountWhy makes the why box of one set; table is the table's drawn rows, whose notes it keeps up to date. */
export function mountWhy(sc: SetCtx, table: Rows): WhyPanel {
  const { ctx, setId, view } = sc;
  const whyBox = h("section", { class: "output why-box", id: "why", hidden: true, "aria-labelledby": "why-h", "aria-live": "polite" });
  // Why the waiting tasks in view wait, as the scheduler last said.
  const whys = new Map<number, TaskWhy>();
  let whyBusy = false;
  let whyAt = 0;
  let shownWhy: number | undefined; // the task whose why is open below the table
  let whyTicker: ReturnType<typeof setInterval> | undefined;
  ctx.signal.addEventListener("abort", () => clearInterval(whyTicker));

  /** follow asks every whyEvery while a waiting row is drawn, and stops when none is. */
  function follow(waiting: boolean): void {
    if (waiting && whyTicker === undefined) {
      whyTicker = setInterval(() => void askWhy(), whyEvery);
      // Rows that just came into view are asked about soon, not at the next tick.
      setTimeout(() => void askWhy(), 300);
    } else if (!waiting && whyTicker !== undefined) {
      clearInterval(whyTicker);
      whyTicker = undefined;
    }
  }

  /** showWhy opens the scheduler's whole answer for one task below the table, asked again with the rows in view. */
  function showWhy(index: number): void {
    shownWhy = index;
    whyBox.hidden = false;
    drawWhy();
    void askWhy(true);
  }

  function drawWhy(): void {
    if (shownWhy === undefined) return;
    const index = shownWhy;
    const t = view.tasks.get(index);
    const w = whys.get(index);
    const close = h(
      "button",
      {
        type: "button",
        class: "link",
        onclick: () => {
          whyBox.hidden = true;
          shownWhy = undefined;
          table.redrawRow(index)?.querySelector<HTMLElement>("[data-action=why]")?.focus();
        },
      },
      "Close",
    );
    const head = h("div", { class: "output-head" }, h("h3", { id: "why-h" }, `Why task ${index} waits`), close);
    if (!t || !isWaiting(t)) {
      replace(whyBox, head, h("p", { id: "why-state" }, t ? `Task ${index} is not waiting: it is ${taskStateName(t.state)}${t.copies.some((c) => c.state === CopyState.RUNNING) ? " and running" : ""}.` : "Loading…"));
      return;
    }
    if (!w) {
      replace(whyBox, head, h("p", { class: "muted" }, "Asking the scheduler…"));
      return;
    }
    const rows: [string, string, string][] = [
      ["Reason", "why-reason", w.reasonText],
      ["Class", "why-class", w.class],
      ["Position in its set", "why-position", fmtAtLeast(w.position, w.positionExact)],
      ["Sets ahead", "why-jobs", fmtAtLeast(w.jobsAhead, w.tasksAheadExact)],
      ["Tasks ahead", "why-ahead", fmtAtLeast(w.tasksAhead, w.tasksAheadExact)],
      ["Starts in", "why-start", fmtEta(w.startInSeconds, w.startIsLowerBound)],
      ["Finishes in", "why-finish", fmtEta(w.finishInSeconds, w.finishIsLowerBound, w.pastEstimate)],
      ["Slots free", "why-slots", `${w.freeSlots} of ${w.slots}`],
    ];
    if (w.maxRunning > 0) rows.push(["Cap (--max-running)", "why-cap", `${w.running} of ${w.maxRunning} running`]);
    replace(
      whyBox,
      head,
      h("dl", { class: "meta" }, rows.map(([k, id, v]) => [h("dt", null, k), h("dd", { id }, v)])),
      w.assumptions ? h("p", { class: "muted", id: "why-assumptions" }, `The estimate assumes ${w.assumptions}.`) : null,
    );
  }

  /** askWhy asks the scheduler why the waiting tasks in view wait: one call, at most one at a time and one per whyEvery. */
  async function askWhy(now = false): Promise<void> {
    if (whyBusy || document.hidden || (!now && Date.now() - whyAt < whyEvery - 500)) return;
    const idx: number[] = [];
    if (shownWhy !== undefined && !table.isDrawn(shownWhy)) idx.push(shownWhy);
    for (const i of table.waitingInView()) idx.push(i);
    if (idx.length === 0) return;
    whyBusy = true;
    whyAt = Date.now();
    try {
      const r = await ctx.clients.tasks.why({ setId, indexes: idx.slice(0, 1000) }, { signal: ctx.signal });
      for (const w of r.tasks) {
        whys.set(w.index, w);
        table.touch(w.index);
      }
      sc.schedule({ window: true });
      drawWhy();
    } catch {
      // The next tick asks again; the rows keep their last answer.
    } finally {
      whyBusy = false;
    }
  }

  return { el: whyBox, answer: (i) => whys.get(i), follow, show: showWhy, redraw: drawWhy };
}
