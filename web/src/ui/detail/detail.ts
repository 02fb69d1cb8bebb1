// One task set watched live: makes the set's shared state, mounts its
// header, table, why box and output panel, and wires them to the watch
// stream and to one another. The stream's messages update the set's model
// as they come; the page is drawn at most once per animation frame (the
// counts at most every headMs), and only the rows in view that changed are
// drawn again.

import { Backoff } from "../../backoff";
import type { TaskSet } from "../../gen/batch/v1/types_pb";
import { Searcher, applyWatch, emptyView } from "../../state";
import { parseRoute } from "../../route";
import { runWatch, sleep, statusText } from "../../watch";
import type { Ctx } from "../context";
import { isDisabled, replace, setDisabled } from "../dom";
import type { Dirty, SetCtx } from "./context";
import { mountHeader } from "./header";
import { mountOutput } from "./output";
import { mountTable } from "./table";
import { mountTaskView } from "../task/view";
import { mountWhy } from "./why";

/** headMs bounds how often the counts and the stacked bar follow a running set. */
const headMs = 500;

/** mountDetail draws set setId into detail and keeps it live; onSet hears the set as the head is drawn. */
export function mountDetail(detail: HTMLElement, ctx: Ctx, setId: bigint, onSet: (ts: TaskSet) => void): void {
  // One redraw per animation frame at most, of what changed since the last.
  const dirty: Dirty = { head: false, order: false, rows: false, window: false };
  let frame = 0;
  function schedule(what: Partial<Dirty>): void {
    Object.assign(dirty, Object.fromEntries(Object.entries(what).filter(([, v]) => v)));
    if (frame === 0) frame = requestAnimationFrame(redraw);
  }
  const sc: SetCtx = { ctx, setId, view: emptyView(), searcher: new Searcher(), loaded: false, stopped: false, dirty, schedule };
  const { view } = sc;

  const header = mountHeader(sc);
  const table = mountTable(sc, header.title, {
    outputShown: (i) => i === output.shown(),
    why: (i) => why.answer(i),
    drawn: (waiting) => why.follow(waiting),
    act: (action, index, button) => void act(action, index, button),
  });
  const why = mountWhy(sc, table);
  const output = mountOutput(sc, table);
  const taskView = mountTaskView(sc, table, header.title);
  replace(detail, ...header.top, table.tools, table.shownNote, table.cmdNote, table.scroller, why.el, output.el, taskView.el, ...header.dialogs);

  // A task named in the address opens in its own view; going back closes it. The set's view and its stream stay.
  function follow(r: ReturnType<typeof parseRoute>): void {
    if (r.view !== "sets") return;
    if (r.task !== undefined) taskView.open(r.task, r.line);
    else taskView.close();
  }
  ctx.onRoute(follow);
  const first = parseRoute(location.hash);
  if (first.view === "sets" && first.task !== undefined) requestAnimationFrame(() => follow(first));

  // The counts above the table change with every task that starts or ends:
  // they are drawn at most every headMs (the rows in view, every frame).
  let headDrawnAt = -Infinity;
  let headTimer: ReturnType<typeof setTimeout> | undefined;
  function scheduleHead(): void {
    if (headTimer !== undefined) return;
    const wait = headDrawnAt + headMs - performance.now();
    if (wait <= 0) schedule({ head: true });
    else
      headTimer = setTimeout(() => {
        headTimer = undefined;
        schedule({ head: true });
      }, wait);
  }
  ctx.signal.addEventListener("abort", () => {
    cancelAnimationFrame(frame);
    clearTimeout(headTimer);
  });

  function redraw(): void {
    frame = 0;
    const d = { ...dirty };
    Object.assign(dirty, { head: false, order: false, rows: false, window: false });
    if (d.order) table.rebuildOrder();
    if (d.order || d.rows || d.window) table.drawWindow();
    if (d.head) {
      headDrawnAt = performance.now();
      header.draw();
      table.drawTools();
      if (view.set) onSet(view.set);
    }
  }

  /** act does what a row's button asks: request, cancel or retry the task, or open its output, attempts or why. */
  async function act(action: string, index: number, button: HTMLButtonElement): Promise<void> {
    if (isDisabled(button)) return;
    setDisabled(button, true);
    try {
      if (action === "request") {
        output.openWhenFinished(index);
        await ctx.clients.tasks.request({ setId, indexes: [index] }, { signal: ctx.signal });
        ctx.notify(`Requested task ${index} of set #${setId}; its output opens below when it finishes.`);
        // The panel says so where it will show the output, and is put in view; the focus stays in the row.
        output.awaitOutput(index);
        output.afterUpdate([index]);
      } else if (action === "cancel") {
        const r = await ctx.clients.tasks.cancel({ setId, indexes: [index] }, { signal: ctx.signal });
        ctx.notify(r.stopped > 0 ? `Stopped task ${index} of set #${setId} (billed for what it used).` : `Canceled task ${index} of set #${setId}.`);
      } else if (action === "retry") {
        const r = await ctx.clients.tasks.retry({ setId, indexes: [index] }, { signal: ctx.signal });
        const t = r.tasks[0];
        ctx.notify(`Retrying task ${index} of set #${setId} in place${t ? ` as attempt ${t.attempt}` : ""}.`);
      } else if (action === "output") {
        await output.showOutput(index, true);
        return;
      } else if (action === "attempts") {
        await output.showDetail(index);
      } else if (action === "why") {
        why.show(index);
        return;
      }
      ctx.clearProblem();
    } catch (err) {
      output.forget(index);
      const what = { request: "Requesting", cancel: "Canceling", retry: "Retrying" }[action] ?? "Reading the output of";
      ctx.fail(err, `${what} task ${index}`);
    } finally {
      setDisabled(button, false);
    }
  }

  void runWatch(
    setId,
    {
      open: (id, signal) => ctx.clients.tasks.watchTaskSet({ setId: id }, { signal }),
      sleep,
      backoff: new Backoff(),
    },
    (m) => {
      // The model follows every message; the page is drawn once per frame.
      const change = applyWatch(view, m);
      if (m.snapshot) {
        sc.loaded = true;
        sc.searcher.reset();
        table.staleAll();
      }
      if (change.all) {
        schedule({ order: true, head: true });
        output.afterUpdate(view.tasks.keys());
        taskView.changed(view.tasks.keys());
      } else {
        table.tasksChanged(change.indexes);
        output.afterUpdate(change.indexes);
        taskView.changed(change.indexes);
        scheduleHead();
      }
      why.redraw();
    },
    (s) => {
      const { text, cls } = statusText(s);
      header.status(text, cls);
      if (s.kind === "stopped") {
        sc.stopped = true;
        ctx.problem(s.problem);
        schedule({ head: true, window: true });
      }
    },
    ctx.signal,
  );
  schedule({ window: true });
}
