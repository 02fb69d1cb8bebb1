// The table of a watched set's tasks: the filter, sort and jump tools, the
// note on what the commands share, the order of the rows, and the rows in
// view. A set may hold 100,000 tasks: only the rows in view are drawn, each
// placed at its offset, and only those whose task changed are drawn again.

import { commandText, copyLabel, fmtCount, fmtDuration, fmtPercent, taskStateName, tsSeconds } from "../../format";
import { parseRoute, routeHash } from "../../route";
import type { TaskWhy } from "../../gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "../../gen/batch/v1/types_pb";
import type { Task } from "../../gen/batch/v1/types_pb";
import {
  buildOrder,
  isCancelable,
  isFailed,
  isRequestable,
  isRetryable,
  isRunning,
  updateOrder,
  visibleResponse,
  windowRange,
} from "../../state";
import type { Filter, SortKey, StateFilter } from "../../state";
import type { CommandParts } from "../../vary";
import { h, isDisabled, replace, setDisabled } from "../dom";
import type { Rows, SetCtx } from "./context";
import { isWaiting, whyNote } from "./why";

/** overscan is how many rows are drawn above and below the visible ones, so a scroll shows no blank. */
const overscan = 10;

/** resortMs bounds how often an order sorted by state or service time is rebuilt while tasks change under it. */
const resortMs = 1000;

/** stateFilters are the states the filter tool shows. */
// The options carry no counts (the legend above the table has them): a select's options changed ten times a second cost more than the rows.
const stateFilters: [StateFilter, string][] = [
  ["all", "All tasks"],
  ["running", "Running"],
  ["failed", "Failed"],
  ["requested", "Requested"],
  ["executed", "Executed"],
  ["disclosed", "Disclosed"],
  ["finished", "Finished"],
  ["canceled", "Canceled"],
];

/** sortKeys are the table's orders, as the sort tool names them. */
const sortKeys: [SortKey, string][] = [
  ["index", "Index, first to last"],
  ["index-desc", "Index, last to first"],
  ["state", "State: running and requested first"],
  ["service-desc", "Service time, longest first"],
  ["service", "Service time, shortest first"],
];

/** columns are the table's column heads. */
const columns = ["#", "Command", "State", "Progress", "Copies", "Visible response", "Service", "Exit", "Actions"];

/** Marks is what the table asks of the panels beside it while it draws. */
export interface Marks {
  /** outputShown says whether task i's output or attempts are open (its Output button is pressed). */
  outputShown(i: number): boolean;
  /** why is the scheduler's last answer for task i, shown in its row while it waits. */
  why(i: number): TaskWhy | undefined;
  /** drawn is told after each drawing of the rows whether one of them waits for a slot. */
  drawn(waiting: boolean): void;
  /** act is a row's button pressed: its data-action, the row's task and the button. */
  act(action: string, index: number, button: HTMLButtonElement): void;
}

/** Table is the table of one set and its tools; it is the Rows the panels below it see. */
export interface Table extends Rows {
  /** tools are the filter, sort and jump tools. */
  readonly tools: HTMLElement;
  /** shownNote says how many tasks are shown of how many. */
  readonly shownNote: HTMLElement;
  /** cmdNote says what every command shares. */
  readonly cmdNote: HTMLElement;
  /** scroller is the box the table scrolls in. */
  readonly scroller: HTMLElement;
  /** rebuildOrder filters and sorts the rows again. */
  rebuildOrder(): void;
  /** tasksChanged takes the indexes a message changed: the order is kept up to date, the rows in view redrawn. */
  tasksChanged(indexes: number[]): void;
  /** staleAll marks every drawn row to be drawn again (a fresh snapshot). */
  staleAll(): void;
  /** drawTools enables the jump tools once the set loaded and says what the commands share. */
  drawTools(): void;
}

/** mountTable makes the table of one set; home takes the focus when a focused row scrolls out of the drawn ones. */
export function mountTable(sc: SetCtx, home: HTMLElement, marks: Marks): Table {
  const { ctx, view, searcher } = sc;
  const cmdNote = h("p", { class: "cmd-note muted", id: "cmd-note", hidden: true });
  const stateSel = h(
    "select",
    { id: "f-state", name: "state" },
    stateFilters.map(([k, label]) => h("option", { value: k }, label)),
  );
  const textIn = h("input", { id: "f-text", name: "find", type: "search", autocomplete: "off", spellcheck: "false", placeholder: "index or text" });
  const sortSel = h("select", { id: "f-sort", name: "sort" }, sortKeys.map(([k, label]) => h("option", { value: k }, label)));
  const nextRunning = h("button", { type: "button", id: "next-running", "data-jump": "running" }, "Next running");
  const nextFailed = h("button", { type: "button", id: "next-failed", "data-jump": "failed" }, "Next failed");
  const shownNote = h("p", { class: "muted shown-note", id: "shown-note" });
  // The table is laid out with CSS grid, not table layout, and each drawn row
  // is placed at its offset: a changed row is laid out and painted alone,
  // where a table would lay out all its rows again. The roles keep it a
  // table for assistive technology.
  const headRow = h("tr", { role: "row", "aria-rowindex": 1 }, columns.map((c, i) => h("th", { scope: "col", role: "columnheader", class: i === 0 || (i >= 5 && i <= 7) ? "num" : undefined }, c)));
  const table = h(
    "table",
    { class: "tasks", id: "tasks", role: "table", "aria-rowcount": 1, "aria-describedby": "tasks-cap" },
    h("caption", { class: "sr-only", id: "tasks-cap" }, "Tasks of the set; only the rows in view are drawn"),
    h("thead", { role: "rowgroup" }, headRow),
  );
  const tbody = h("tbody", { role: "rowgroup" });
  table.append(tbody);
  const emptyRow = h("tr", { class: "empty", role: "row" }, h("td", { role: "cell", class: "muted" }));
  const scroller = h("div", { class: "table-wrap task-scroll", id: "task-scroll" }, table);
  const tools = h(
    "div",
    { class: "table-tools", role: "group", "aria-label": "Which tasks to show" },
    h("div", { class: "tool" }, h("label", { for: "f-state" }, "Show"), stateSel),
    h("div", { class: "tool tool-text" }, h("label", { for: "f-text" }, "Find"), textIn),
    h("div", { class: "tool" }, h("label", { for: "f-sort" }, "Sort by"), sortSel),
    h("div", { class: "tool tool-jump" }, nextRunning, nextFailed),
  );

  // --- the order of the rows, and which rows are drawn ---------------------

  // The filter and the sort start from the address, and the address follows them (a shared link shows the same rows).
  const start = parseRoute(location.hash);
  if (start.view === "sets") {
    if (start.state && stateFilters.some(([k]) => k === start.state)) stateSel.value = start.state;
    if (start.sort && sortKeys.some(([k]) => k === start.sort)) sortSel.value = start.sort;
    if (start.q) textIn.value = start.q;
  }
  let filter: Filter = { state: stateSel.value as StateFilter, text: textIn.value };
  let sort: SortKey = sortSel.value as SortKey;
  let order: number[] = [];
  let orderBuiltAt = 0;
  const rendered = new Map<number, HTMLTableRowElement>(); // rows in the DOM, by task index
  const placed = new WeakMap<HTMLTableRowElement, number>(); // where each drawn row is placed
  const stale = new Set<number>(); // drawn rows whose task changed since
  let rowH = 37; // measured from a drawn row once there is one
  let measured = false;
  let range = { start: 0, end: 0 };
  let jumped: number | undefined; // the row a jump landed on, marked until the next jump
  let resortTimer: ReturnType<typeof setTimeout> | undefined;
  ctx.signal.addEventListener("abort", () => clearTimeout(resortTimer));

  /** rebuildOrder filters and sorts the rows again, and says how many are shown. */
  function rebuildOrder(): void {
    clearTimeout(resortTimer);
    resortTimer = undefined;
    order = buildOrder(view, filter, sort, searcher);
    orderBuiltAt = performance.now();
    table.setAttribute("aria-rowcount", String(order.length + 1));
    drawShown();
  }

  /** drawShown says how many tasks are shown of how many. */
  function drawShown(): void {
    const total = view.tasks.size;
    const text =
      !sc.loaded ? "" : order.length === total ? `${fmtCount(total)} task${total === 1 ? "" : "s"}` : `Showing ${fmtCount(order.length)} of ${fmtCount(total)} tasks`;
    if (shownNote.textContent !== text) shownNote.textContent = text;
  }

  /** tasksChanged takes the indexes a message changed: the order is kept up to date, the rows in view redrawn. */
  function tasksChanged(indexes: number[]): void {
    let rows = false;
    for (const i of indexes) {
      if (rendered.has(i)) {
        stale.add(i);
        rows = true;
      }
    }
    if (updateOrder(order, view, indexes, filter, sort, searcher)) {
      if (filter.state !== "all") {
        table.setAttribute("aria-rowcount", String(order.length + 1));
        drawShown();
        rows = true;
      }
    } else if (resortTimer === undefined) {
      // Sorted by what changes: rebuild at most once every resortMs, so rows do not jump under the pointer.
      const wait = Math.max(0, orderBuiltAt + resortMs - performance.now());
      resortTimer = setTimeout(() => {
        resortTimer = undefined;
        sc.schedule({ order: true });
      }, wait);
    }
    if (rows) sc.schedule({ rows: true });
  }

  /** focusIn says where in the table the focus is, so a redraw can put it back. */
  function focusIn(): { index: number; action: string } | undefined {
    const el = document.activeElement as HTMLElement | null;
    const tr = el && tbody.contains(el) ? el.closest<HTMLTableRowElement>("tr[data-index]") : null;
    return tr ? { index: Number(tr.dataset.index), action: el!.dataset.action ?? "" } : undefined;
  }

  /** refocus puts the focus back on a row drawn again: on the same button if it still has one. */
  function refocus(tr: HTMLTableRowElement, action: string): void {
    const again = (action && tr.querySelector<HTMLElement>(`[data-action="${action}"]`)) || tr.querySelector<HTMLElement>("button") || tr.cells[0];
    again.focus({ preventScroll: true });
  }

  /** drawWindow draws the rows in view: those new to it or whose task changed, each placed at its offset. */
  function drawWindow(): void {
    const f = focusIn();
    const head = table.tHead?.offsetHeight ?? 0;
    range = windowRange(scroller.scrollTop - head, scroller.clientHeight - head, rowH, order.length, overscan);
    const want = order.slice(range.start, range.end);
    const keep = new Set(want);
    for (const [i, tr] of rendered) {
      if (!keep.has(i)) {
        tr.remove();
        rendered.delete(i);
        stale.delete(i);
      }
    }
    const now = ctx.now();
    let cur = tbody.firstChild;
    for (let k = 0; k < want.length; k++) {
      const i = want[k];
      let tr = rendered.get(i);
      if (!tr || stale.has(i)) {
        const t = view.tasks.get(i)!;
        const fresh = taskRow(sc.setId, t, view.parts, now, marks.outputShown(i), i === jumped, isWaiting(t) ? marks.why(i) : undefined);
        if (tr) {
          if (cur === tr) cur = fresh;
          const at = placed.get(tr);
          if (at !== undefined) {
            placed.set(fresh, at);
            fresh.setAttribute("aria-rowindex", String(at + 2));
            fresh.style.top = `${at * rowH}px`;
          }
          tr.replaceWith(fresh);
        }
        tr = fresh;
        rendered.set(i, tr);
        stale.delete(i);
      }
      const pos = range.start + k;
      if (placed.get(tr) !== pos) {
        placed.set(tr, pos);
        tr.setAttribute("aria-rowindex", String(pos + 2));
        tr.style.top = `${pos * rowH}px`;
      }
      if (cur === tr) cur = cur.nextSibling;
      else tbody.insertBefore(tr, cur);
    }
    while (cur) {
      const next = cur.nextSibling;
      if (cur !== emptyRow) (cur as Element).remove();
      cur = next;
    }
    const height = order.length > 0 ? `${order.length * rowH}px` : "";
    if (tbody.style.height !== height) tbody.style.height = height;
    // A set taller than the box (760 px at most) scrolls in a box of fixed size, so that nothing in it moves the page around it.
    scroller.classList.toggle("tall", order.length * rowH > 760);
    if (order.length === 0) {
      emptyRow.cells[0].textContent = sc.stopped && !sc.loaded
        ? "The set could not be loaded: see the message above."
        : !sc.loaded
          ? "Loading…"
          : view.tasks.size === 0
            ? "This set has no tasks."
            : "No task matches the filter.";
      tbody.append(emptyRow);
    } else emptyRow.remove();
    if (f) {
      const back = rendered.get(f.index);
      if (back && !back.contains(document.activeElement)) refocus(back, f.action);
      // A focused row scrolled out of the drawn rows: keep the focus in the table rather than drop it to the page.
      else if (!back) home.focus({ preventScroll: true });
    }
    clock();
    if (!measured && rendered.size > 0) {
      const first = rendered.values().next().value!;
      const got = first.getBoundingClientRect().height;
      measured = true;
      if (got > 0 && Math.abs(got - rowH) > 0.5) {
        rowH = got;
        for (const tr of rendered.values()) placed.delete(tr);
        sc.schedule({ window: true });
      }
    }
  }

  scroller.addEventListener("scroll", () => sc.schedule({ window: true }), { passive: true });
  const resized = new ResizeObserver(() => {
    measured = false; // the rows may be another height on a narrower screen
    sc.schedule({ window: true });
  });
  resized.observe(scroller);
  ctx.signal.addEventListener("abort", () => resized.disconnect());

  // --- the filter, sort and jump tools ------------------------------------

  /** refilter takes the tools' filter and sort and draws the order again from the top. */
  function refilter(): void {
    filter = { state: stateSel.value as StateFilter, text: textIn.value };
    sort = sortSel.value as SortKey;
    scroller.scrollTop = 0;
    const r = parseRoute(location.hash);
    if (r.view === "sets") {
      const want = routeHash({ ...r, state: filter.state === "all" ? undefined : filter.state, sort: sort === "index" ? undefined : sort, q: filter.text.trim() || undefined });
      if (want !== location.hash) history.replaceState(history.state, "", want);
    }
    sc.schedule({ order: true });
  }
  stateSel.addEventListener("change", refilter);
  sortSel.addEventListener("change", refilter);
  let typing: ReturnType<typeof setTimeout> | undefined;
  textIn.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(refilter, 150); // one pass over 100,000 tasks per pause in typing, not per key
  });
  textIn.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      clearTimeout(typing);
      refilter();
    }
  });
  ctx.signal.addEventListener("abort", () => clearTimeout(typing));

  /** jump scrolls to the next task (after the one focused or at the top) that runs or failed, and focuses it. */
  function jump(kind: "running" | "failed", button: HTMLButtonElement): void {
    if (isDisabled(button)) return;
    if (sc.dirty.order) rebuildOrder();
    const pred = kind === "running" ? isRunning : isFailed;
    const f = focusIn();
    const head = table.tHead?.offsetHeight ?? 0;
    let from = f ? order.indexOf(f.index) : Math.floor(Math.max(0, scroller.scrollTop - head) / rowH) - 1;
    if (jumped !== undefined && !f) {
      const p = order.indexOf(jumped);
      if (p >= 0) from = p;
    }
    const n = order.length;
    let at = -1;
    for (let k = 1; k <= n; k++) {
      const p = (((from + k) % n) + n) % n;
      const t = view.tasks.get(order[p]);
      if (t && pred(t)) {
        at = p;
        break;
      }
    }
    if (at < 0) {
      let hidden = 0;
      for (const t of view.tasks.values()) if (pred(t)) hidden++;
      ctx.notify(
        hidden > 0
          ? `No ${kind} task among the tasks shown; the filter hides ${hidden}.`
          : kind === "running" ? "No task of this set is running." : "No task of this set has failed.",
      );
      return;
    }
    const prev = jumped;
    jumped = order[at];
    for (const i of [prev, jumped]) if (i !== undefined && rendered.has(i)) stale.add(i);
    scroller.scrollTop = Math.max(0, at * rowH - 2 * rowH);
    drawWindow();
    const tr = rendered.get(jumped);
    tr?.cells[0].focus({ preventScroll: true });
  }
  nextRunning.addEventListener("click", () => jump("running", nextRunning));
  nextFailed.addEventListener("click", () => jump("failed", nextFailed));

  // --- the note on the commands, the jump tools' state -------------------

  let noteKey = "";
  /** drawTools enables the jump tools once the set loaded and says what the commands share. */
  function drawTools(): void {
    const blocked = !sc.loaded || sc.stopped;
    setDisabled(nextRunning, blocked);
    setDisabled(nextFailed, blocked);
    if (!view.set) return;
    const sh = view.parts.shared();
    const env = view.parts.varyingEnv();
    const same = view.parts.sameCommand();
    const nk = sh ? `${sh.prefix}\t${sh.suffix}\t${env.join(",")}` : same !== undefined ? `=\t${same}\t${env.join(",")}` : "";
    if (nk !== noteKey) {
      noteKey = nk;
      cmdNote.hidden = !sh && same === undefined;
      if (!sh && same !== undefined) {
        // An array or file set: one command, and what differs is its environment.
        replace(cmdNote, "Every command reads ", h("code", { id: "cmd-shared" }, same), `; the Command column shows what differs: ${env.join(", ")}.`);
      } else if (sh) {
        replace(
          cmdNote,
          "Every command reads ",
          h("code", null, sh.prefix, h("mark", null, "…"), sh.suffix),
          "; the Command column shows the part marked …",
          env.length > 0 ? ` and the environment that differs (${env.join(", ")})` : "",
          ".",
        );
      }
    }
  }

  // --- one row again, the rows' buttons, and the clock of the waiting rows

  /** redrawRow draws one task's row again now, if it is drawn. */
  function redrawRow(i: number | undefined): HTMLTableRowElement | undefined {
    if (i === undefined || !rendered.has(i)) return undefined;
    stale.add(i);
    drawWindow();
    return rendered.get(i);
  }

  tbody.addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-action]");
    if (!b) return;
    const tr = b.closest("tr")!;
    marks.act(b.dataset.action!, Number(tr.dataset.index), b);
  });

  // The time a requested task has waited ticks in the rows in view; the
  // clock runs only while such a row is drawn (a timer is a wake-up).
  let ticker: ReturnType<typeof setInterval> | undefined;
  function tick(): void {
    const now = ctx.now();
    for (const td of tbody.querySelectorAll<HTMLElement>("td[data-since]")) {
      td.textContent = `${fmtDuration(Math.max(0, now - Number(td.dataset.since)))} so far`;
    }
  }
  /** clock runs the tick while a drawn row's wait ticks, and tells marks whether a drawn row waits. */
  function clock(): void {
    const need = tbody.querySelector("td[data-since]") !== null;
    if (need && ticker === undefined) ticker = setInterval(tick, 1000);
    else if (!need && ticker !== undefined) {
      clearInterval(ticker);
      ticker = undefined;
    }
    marks.drawn(tbody.querySelector("tr[data-waiting]") !== null);
  }
  ctx.signal.addEventListener("abort", () => clearInterval(ticker));

  return {
    tools,
    shownNote,
    cmdNote,
    scroller,
    touch(i) {
      if (i !== undefined && rendered.has(i)) stale.add(i);
    },
    drawWindow,
    redrawRow,
    isDrawn: (i) => rendered.has(i),
    waitingInView() {
      const idx: number[] = [];
      for (const [i, tr] of rendered) if (tr.dataset.waiting !== undefined) idx.push(i);
      return idx;
    },
    rebuildOrder,
    tasksChanged,
    staleAll() {
      for (const i of rendered.keys()) stale.add(i);
    },
    drawTools,
  };
}

function progressCell(t: Task): HTMLElement {
  const running = t.copies.some((c) => c.state === CopyState.RUNNING);
  if (t.progress >= 0 && (running || t.state === TaskState.REQUESTED || t.state === TaskState.DISCLOSED)) {
    const pct = Math.round(Math.min(1, t.progress) * 100);
    return h(
      "div",
      { class: "progress", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": pct, "aria-label": `Task ${t.index} progress` },
      h("div", { class: "bar", style: `width:${pct}%` }),
      h("span", null, fmtPercent(t.progress)),
    );
  }
  if (running) return h("span", { class: "muted" }, "running");
  if (t.state === TaskState.FINISHED || t.state === TaskState.EXECUTED) return h("span", { class: "muted" }, "done");
  return h("span", { class: "muted" }, "—");
}

function copiesCell(t: Task): HTMLElement | string {
  if (t.copies.length === 0) return h("span", { class: "copies-sum" }, "—");
  const cur = t.copies.filter((c) => c.attempt === t.attempt || c.attempt === 0);
  const shown = cur.length > 0 ? cur : t.copies;
  const spec = shown.filter((c) => c.speculative).length;
  const running = shown.filter((c) => c.state === CopyState.RUNNING).length;
  const suspended = shown.filter((c) => c.state === CopyState.SUSPENDED).length;
  const won = shown.find((c) => c.state === CopyState.WON);
  const live = [running > 0 ? `${running} running` : "", suspended > 0 ? `${suspended} suspended` : ""].filter((x) => x).join(", ");
  const end = live || (won ? `${won.speculative ? "spec " : ""}#${won.id} won` : "");
  // Two short lines that always fit the column; every copy is in the title and in the task's own view.
  return h(
    "span",
    { class: "copies-sum", title: shown.map(copyLabel).join("\n") },
    shown.length > 1 || spec > 0 ? h("span", { class: "copies-n" }, `${shown.length}`, spec > 0 ? h("span", { class: "spec-n" }, ` (${spec}\u00a0spec)`) : null) : null,
    end ? h("span", { class: `copies-state${running > 0 ? " copies-running" : ""}` }, end) : null,
  );
}

/** stateBadge is a task's state as one badge: failed and timed-out tasks get their own red badge, never "finished". */
function stateBadge(t: Task): HTMLElement {
  if (isFailed(t)) return h("span", { class: "badge state-failed" }, t.timedOut ? "timed out" : "failed");
  const state = taskStateName(t.state);
  return h("span", { class: `badge state-${state}` }, state);
}

/** taskRow draws one task as a table row of one line; its command shows the part that differs from the others'. */
function taskRow(setId: bigint, t: Task, parts: CommandParts, now: number, outputShown: boolean, jumped: boolean, why: TaskWhy | undefined): HTMLTableRowElement {
  const state = taskStateName(t.state);
  const cmd = commandText(t.spec);
  const shown = parts.varying(t.spec);
  const vr = visibleResponse(t, now);
  const req = tsSeconds(t.requestedAt);
  const n = t.index;
  const actions: HTMLElement[] = [];
  if (isRequestable(t)) actions.push(h("button", { type: "button", "data-action": "request", "aria-label": `Request task ${n}` }, "Request"));
  if (t.state === TaskState.FINISHED) {
    actions.push(h("button", { type: "button", "data-action": "output", "aria-pressed": outputShown ? "true" : "false", "aria-label": `Output of task ${n}` }, "Output"));
  }
  if (isRetryable(t)) {
    actions.push(h("button", { type: "button", "data-action": "retry", title: "Run this task again in place: same index, next attempt", "aria-label": `Retry task ${n}` }, "Retry"));
  }
  if (isCancelable(t)) {
    const stop = t.state === TaskState.REQUESTED;
    actions.push(
      h(
        "button",
        {
          type: "button",
          class: "danger",
          "data-action": "cancel",
          title: stop ? "Stop this requested task; it is billed for what it used" : "Cancel this task; never billed",
          "aria-label": `${stop ? "Stop" : "Cancel"} task ${n}`,
        },
        stop ? "Stop" : "Cancel",
      ),
    );
  }
  const open = routeHash({ view: "sets", setId, task: n });
  return h(
    "tr",
    { role: "row", "data-index": n, "data-state": isFailed(t) ? "failed" : state, class: jumped ? "jumped" : undefined, "data-waiting": isWaiting(t) ? "" : undefined },
    h("td", { role: "cell", class: "num", tabindex: -1 }, h("a", { href: open, class: "task-link", "data-action": "open", "aria-label": `Open task ${n}` }, String(n))),
    h("td", { role: "cell", class: "cmd" }, h("a", { href: open, class: "cmd-link", title: cmd, tabindex: -1 }, h("code", null, shown))),
    h(
      "td",
      { role: "cell", "data-col": "state" },
      stateBadge(t),
      !isFailed(t) && t.timedOut ? h("span", { class: "muted" }, " timed out") : null,
      // A retried task's attempt, as a button that opens its attempts and copies.
      t.attempt > 1
        ? [
            " ",
            h(
              "button",
              { type: "button", class: "link attempt-mark", "data-action": "attempts", title: `Attempt ${t.attempt}: show every attempt and copy`, "aria-label": `attempt ${t.attempt}, show its attempts` },
              `↻${t.attempt}`,
            ),
          ]
        : null,
    ),
    h("td", { role: "cell", "data-col": "progress" }, (why && whyNote(why)) || progressCell(t)),
    h("td", { role: "cell", "data-col": "copies" }, copiesCell(t)),
    h(
      "td",
      { role: "cell", "data-col": "response", class: "num", "data-since": vr && !vr.final && req !== undefined ? String(req) : undefined },
      vr ? (vr.final ? fmtDuration(vr.seconds) : `${fmtDuration(vr.seconds)} so far`) : "—",
    ),
    h("td", { role: "cell", class: "num", "data-col": "service" }, t.state === TaskState.FINISHED || t.state === TaskState.EXECUTED ? fmtDuration(t.serviceSeconds) : "—"),
    h("td", { role: "cell", class: "num", "data-col": "exit" }, t.state === TaskState.FINISHED ? String(t.exitCode) : "—"),
    h("td", { role: "cell", class: "actions" }, actions),
  );
}
