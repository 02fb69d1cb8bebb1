// A task's own view (#/sets/N/tasks/I): a drawer beside the table on a wide
// screen, the whole screen on a phone. It shows the command as given, its
// environment, working directory and resources, each attempt and copy on a
// small timeline, the kept files of its result, and its output as it is
// written. Opening it puts it in view and moves the focus to it; Escape or
// Close closes it and gives the focus back to the task's row.

import { fmtDuration, fmtLocal, fmtUTC, nbsp, shellQuote, taskStateName } from "../../format";
import type { Task } from "../../gen/batch/v1/types_pb";
import { TaskState } from "../../gen/batch/v1/types_pb";
import { parseRoute, routeHash } from "../../route";
import type { SetsRoute } from "../../route";
import { timeline } from "../../timeline";
import type { Span } from "../../timeline";
import { h, replace } from "../dom";
import type { Rows, SetCtx } from "../detail/context";
import { keptSection } from "../detail/kept";
import { followOutput } from "./follow";
import type { Follow } from "./follow";

/** refreshMs bounds how often the open task is read again while the watch says it changes. */
const refreshMs = 1000;

/** TaskView is the view of one task of the set, open or closed. */
export interface TaskView {
  /** el is the drawer. */
  readonly el: HTMLElement;
  /** shown is the open task, if any. */
  shown(): number | undefined;
  /** open shows task index (line: the output line to mark), moving the focus to it. */
  open(index: number, line: number | undefined): void;
  /** close hides the view and gives the focus back to the task's row. */
  close(): void;
  /** changed hears the tasks the watch stream changed: the open one is read again. */
  changed(indexes: Iterable<number>): void;
}

/** mountTaskView makes the task view of one set; rows is the table, whose open link gets the focus back. */
export function mountTaskView(sc: SetCtx, rows: Rows, home: HTMLElement): TaskView {
  const { ctx, setId } = sc;
  const title = h("h2", { id: "tv-h", tabindex: -1 });
  const close = h("button", { type: "button", class: "link", id: "tv-close", "aria-keyshortcuts": "Escape" }, "Close");
  const body = h("div", { class: "tv-body" });
  const el = h(
    "aside",
    { class: "task-view", id: "task-view", hidden: true, "aria-labelledby": "tv-h", role: "dialog", "aria-modal": "false" },
    h("div", { class: "tv-head" }, title, close),
    body,
  );
  const info = h("div", { class: "tv-info" });
  const times = h("section", { class: "tv-timeline", "aria-labelledby": "tv-time-h" });
  const kept = h("div", { class: "tv-kept" });
  let index: number | undefined;
  let follow: Follow | undefined;
  let readAt = 0;
  let readTimer: ReturnType<typeof setTimeout> | undefined;
  let keptFor = "";
  ctx.signal.addEventListener("abort", () => {
    clearTimeout(readTimer);
    follow?.stop();
  });

  /** leave asks the route to close the view (so the back button and the address follow). */
  function leave(): void {
    const r = { view: "sets" as const, setId, ...tableState() };
    location.hash = routeHash(r);
  }
  close.addEventListener("click", leave);
  el.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !e.defaultPrevented) {
      e.preventDefault();
      leave();
    }
  });

  function open(i: number, line: number | undefined): void {
    if (index === i) {
      follow?.mark(line);
      return;
    }
    follow?.stop();
    const prev = index;
    index = i;
    keptFor = "";
    rows.touch(prev);
    rows.touch(i);
    rows.drawWindow();
    title.textContent = `Task ${i}`;
    replace(info, h("p", { class: "muted" }, "Loading…"));
    replace(times);
    replace(kept);
    follow = followOutput(sc, i, line);
    replace(body, info, times, h("section", { class: "tv-out", "aria-labelledby": "tv-out-h" }, h("h3", { id: "tv-out-h" }, "Output"), follow.el), kept);
    el.hidden = false;
    document.documentElement.classList.add("task-view-open");
    el.scrollTop = 0;
    el.scrollIntoView({ block: "nearest" });
    title.focus({ preventScroll: true });
    void read();
  }

  function shut(): void {
    if (index === undefined) return;
    const was = index;
    index = undefined;
    follow?.stop();
    follow = undefined;
    clearTimeout(readTimer);
    readTimer = undefined;
    el.hidden = true;
    document.documentElement.classList.remove("task-view-open");
    const tr = rows.redrawRow(was);
    const back = tr?.querySelector<HTMLElement>("[data-action=open]");
    (back ?? home).focus({ preventScroll: !back });
  }

  /** read asks for the open task (its attempts and copies) and draws it. */
  async function read(): Promise<void> {
    const i = index;
    if (i === undefined) return;
    readAt = performance.now();
    try {
      const r = await ctx.clients.tasks.getTask({ setId, index: i }, { signal: ctx.signal });
      if (index !== i || !r.task) return;
      draw(r.task);
      if (follow?.waiting() && (r.task.state === TaskState.REQUESTED || r.task.state === TaskState.FINISHED)) {
        const was = follow;
        follow = followOutput(sc, i, undefined);
        was.el.replaceWith(follow.el);
        was.stop();
      }
      if (r.task.state === TaskState.FINISHED) await readKept(r.task);
    } catch (err) {
      if (index !== i) return;
      replace(info, h("p", null, "Not available."));
      ctx.fail(err, `Reading task ${i}`);
    }
  }

  async function readKept(t: Task): Promise<void> {
    const key = `${t.index}/${t.attempt}`;
    if (keptFor === key || !(t.spec?.keep.length ?? 0)) return;
    keptFor = key;
    const r = await ctx.clients.tasks.getOutput({ setId, index: t.index, limit: 1n }, { signal: ctx.signal });
    if (index !== t.index) return;
    replace(kept, keptSection(sc, t.index, r));
  }

  function draw(t: Task): void {
    const spec = t.spec;
    const argv = spec?.argv ?? [];
    const env = Object.entries(spec?.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const state = taskStateName(t.state);
    const failed = t.state === TaskState.FINISHED && (t.exitCode !== 0 || t.timedOut);
    const facts: [string, string, string][] = [];
    if (t.state === TaskState.FINISHED) facts.push(["Exit", "tv-exit", `${t.exitCode}${t.timedOut ? " (timed out)" : ""}`]);
    if (t.state === TaskState.FINISHED || t.state === TaskState.EXECUTED) facts.push(["Service", "tv-service", fmtDuration(t.serviceSeconds)]);
    if (t.state === TaskState.FINISHED) facts.push(["Visible response", "tv-response", fmtDuration(t.visibleResponseSeconds)]);
    if (t.attempt > 1) facts.push(["Attempt", "tv-attempt", String(t.attempt)]);
    if (spec && spec.estimateSeconds > 0) facts.push(["Estimate", "tv-estimate", fmtDuration(spec.estimateSeconds)]);
    if (spec && spec.timeoutSeconds > 0) facts.push(["Time limit", "tv-timeout", fmtDuration(spec.timeoutSeconds)]);
    if (spec && spec.cpus > 0) facts.push(["CPUs", "tv-cpus", String(spec.cpus)]);
    if (spec && spec.memoryMb > 0n) facts.push(["Memory", "tv-mem", `${spec.memoryMb}\u00a0MB`]);
    if (t.failReason) facts.push(["Why it failed", "tv-fail", t.failReason]);
    replace(
      info,
      h(
        "p",
        { class: "tv-state" },
        h("span", { class: `badge state-${failed ? "failed" : state}`, id: "tv-state" }, failed ? (t.timedOut ? "timed out" : "failed") : state),
        t.held ? h("span", { class: "badge state-held" }, "held") : null,
      ),
      h("h3", null, "Command"),
      h("pre", { class: "tv-argv", id: "tv-argv", "aria-label": "The command, each argument as given" }, argv.map((a, k) => [k > 0 ? " " : "", h("span", { class: "arg" }, shellQuote(a))])),
      h(
        "dl",
        { class: "meta tv-meta" },
        h("dt", null, "Directory"),
        h("dd", { id: "tv-dir" }, spec?.dir || "the worker's own (not set)"),
        facts.map(([k, id, v]) => [h("dt", null, k), h("dd", { id }, v)]),
      ),
      h("h3", null, "Environment"),
      env.length === 0
        ? h("p", { class: "muted", id: "tv-env" }, "Nothing set beyond the worker's.")
        : h("dl", { class: "tv-env", id: "tv-env" }, env.map(([k, v]) => [h("dt", null, k), h("dd", null, h("code", null, v))])),
    );
    replace(times, h("h3", { id: "tv-time-h" }, "Attempts and copies"), timeline(t, ctx.now()).map(drawSpan));
  }

  function drawSpan(s: Span): HTMLElement {
    const len = Math.max(1e-3, s.to - s.from);
    const pct = (x: number) => `${(((x - s.from) / len) * 100).toFixed(2)}%`;
    return h(
      "div",
      { class: `tv-span${s.current ? " current" : ""}`, "data-attempt": s.attempt },
      h("h4", null, `Attempt ${s.attempt}${s.current ? " (current)" : ""}: ${s.state}`),
      s.bars.length > 0
        ? h(
            "div",
            { class: "tv-bars", "aria-hidden": "true" },
            s.bars.map((b) =>
              h(
                "div",
                { class: "tv-bar-row" },
                h("span", { class: "tv-bar-label" }, `${b.speculative ? "spec " : ""}#${b.id}`),
                h(
                  "span",
                  { class: "tv-track" },
                  h("span", {
                    class: `tv-bar copy-${b.state}${b.speculative ? " speculative" : ""}${b.won ? " won" : ""}`,
                    style: `left:${pct(b.start)};width:${`${Math.max(1, ((b.end - b.start) / len) * 100).toFixed(2)}%`}`,
                    title: `${b.label}: ${b.state}${b.won ? " (winner)" : ""}${b.suspendedSeconds > 0 ? `, suspended ${fmtDuration(b.suspendedSeconds)} in all` : ""}`,
                  }),
                ),
              ),
            ),
          )
        : null,
      h(
        "ol",
        { class: "tv-events" },
        s.events.map((e) => h("li", null, h("time", { datetime: new Date(e.at * 1000).toISOString(), title: `UTC ${fmtUTC(e.at)}` }, fmtLocal(e.at)), " ", e.what)),
        s.bars.filter((b) => b.open).map((b) => h("li", null, h("span", { class: "muted" }, "now"), ` copy #${b.id} ${b.state}`)),
        s.bars.filter((b) => b.suspendedSeconds > 0).map((b) => h("li", { class: "muted" }, `copy #${b.id} suspended ${nbsp(fmtDuration(b.suspendedSeconds))} in all`)),
      ),
    );
  }

  return {
    el,
    shown: () => index,
    open,
    close: shut,
    changed(indexes) {
      if (index === undefined) return;
      let hit = false;
      for (const i of indexes) if (i === index) hit = true;
      if (!hit || readTimer !== undefined) return;
      const wait = Math.max(0, readAt + refreshMs - performance.now());
      readTimer = setTimeout(() => {
        readTimer = undefined;
        void read();
      }, wait);
    },
  };

  /** tableState is the table's filter and sort as the address keeps them. */
  function tableState(): { state?: string; sort?: string; q?: string } {
    const r = parseCurrent();
    return { state: r.state, sort: r.sort, q: r.q };
  }
}

/** parseCurrent is the address's route within the sets view. */
function parseCurrent(): SetsRoute {
  const r = parseRoute(location.hash);
  return r.view === "sets" ? r : { view: "sets" };
}
