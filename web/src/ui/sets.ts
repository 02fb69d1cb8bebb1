// The task sets view: list of sets, disclose form, and one set watched live.
//
// A set may hold 100,000 tasks. The table draws only the rows in view (the
// rest are two spacer rows of the right height), the watch stream's
// messages update the set's model as they come but the page is redrawn at
// most once per animation frame, and only the rows in view that changed are
// drawn again.

import { Backoff } from "../backoff";
import { describeError } from "../errors";
import { formKey, parseDiscloseForm, Shells } from "../form";
import type { DiscloseForm } from "../form";
import {
  commandText,
  copyLabel,
  copyStateName,
  fmtBytes,
  fmtClock,
  fmtCount,
  fmtDuration,
  fmtNumber,
  fmtPercent,
  outputFileName,
  taskStateName,
  tsSeconds,
} from "../format";
import type { GetOutputResponse, TaskWhy } from "../gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "../gen/batch/v1/types_pb";
import type { Task, TaskSet } from "../gen/batch/v1/types_pb";
import {
  Searcher,
  applyWatch,
  buildOrder,
  emptyView,
  isCancelable,
  isRetryable,
  retryCount,
  isFailed,
  isRequestable,
  isRunning,
  restCount,
  stateSegments,
  updateOrder,
  visibleResponse,
  windowRange,
} from "../state";
import type { Filter, SetView, SortKey, StateFilter } from "../state";
import type { CommandParts } from "../vary";
import { runWatch, sleep, statusText } from "../watch";
import type { Ctx } from "./context";
import { h, isDisabled, replace, setDisabled } from "./dom";

const outputPage = 4 << 20;

/** overscan is how many rows are drawn above and below the visible ones, so a scroll shows no blank. */
const overscan = 10;

/** headMs bounds how often the counts and the stacked bar follow a running set. */
const headMs = 500;

/** resortMs bounds how often an order sorted by state or service time is rebuilt while tasks change under it. */
const resortMs = 1000;

/** mountSets draws the task sets view into root; setId selects the set to watch. */
export function mountSets(root: HTMLElement, ctx: Ctx, setId: bigint | undefined): void {
  const list = h("ul", { class: "set-list", id: "set-list" });
  const listNote = h("p", { class: "muted" }, "Loading…");
  const detail = h("section", { class: "detail card", id: "set-detail", "aria-labelledby": "detail-h" });
  const form = discloseForm(ctx);
  root.append(
    h(
      "div",
      { class: `layout${setId === undefined ? "" : " has-set"}` },
      h(
        "aside",
        { class: "side" },
        h(
          "section",
          { class: "card", "aria-labelledby": "sets-h" },
          h("h2", { id: "sets-h", tabindex: -1 }, "Your task sets"),
          listNote,
          list,
        ),
        form.el,
      ),
      detail,
    ),
  );

  let sets: TaskSet[] = [];
  let listFailing = false;
  let drawn = "";
  function drawList(): void {
    listNote.textContent = sets.length === 0 ? "None yet: disclose one below." : "";
    listNote.hidden = sets.length > 0;
    // The list is polled every five seconds: draw it again only when it changed.
    const key = sets.map((ts) => `${ts.id}\t${ts.name}\t${setLine(ts)}`).join("\n");
    if (key === drawn) return;
    drawn = key;
    replace(
      list,
      sets.map((ts) =>
        h(
          "li",
          null,
          h(
            "a",
            { href: `#/sets/${ts.id}`, "aria-current": ts.id === setId ? "page" : undefined, "data-set": String(ts.id) },
            h("span", { class: "set-name" }, ts.name || "(unnamed)"),
            h("span", { class: "muted set-line" }, setLine(ts)),
          ),
        ),
      ),
    );
  }
  async function loadList(): Promise<void> {
    try {
      const r = await ctx.clients.tasks.listTaskSets({ pageSize: 100 }, { signal: ctx.signal });
      sets = r.taskSets;
      drawList();
      form.listed(sets.length);
      if (listFailing) ctx.clearProblem();
      listFailing = false;
    } catch (err) {
      // Signed out, the sign-in box above says what to do; the list is not broken.
      listNote.textContent = describeError(err, "").signIn ? "Sign in to see your task sets." : "Could not load the list.";
      listNote.hidden = false;
      drawn = "";
      list.replaceChildren();
      // Say it once, not every five seconds while the server is away.
      if (!listFailing) ctx.fail(err, "Listing your task sets");
      listFailing = true;
    }
  }
  void loadList();
  const timer = setInterval(() => void loadList(), 5000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));

  if (setId === undefined) {
    replace(
      detail,
      h("h2", { id: "detail-h" }, "No task set selected"),
      h("p", null, "Pick a task set from the list, or disclose a new one with the form."),
    );
    return;
  }
  mountDetail(detail, ctx, setId, (ts) => {
    // The watched set's line in the list follows the stream (once a frame at most).
    const i = sets.findIndex((x) => x.id === ts.id);
    if (i < 0) return;
    sets[i] = ts;
    const line = list.querySelector<HTMLElement>(`a[data-set="${ts.id}"] .set-line`);
    const text = setLine(ts);
    if (line && line.textContent !== text) line.textContent = text;
  });
}

/** plural is "1 task", "2 tasks". */
function plural(n: number | bigint, noun: string): string {
  return `${fmtCount(n)} ${noun}${n === 1 || n === 1n ? "" : "s"}`;
}

function setLine(ts: TaskSet): string {
  const c = ts.counts;
  if (!c) return `#${ts.id}`;
  const parts = [`#${ts.id}`, plural(c.total, "task")];
  if (c.finished > 0n) parts.push(`${fmtCount(c.finished)} finished`);
  if (c.requested > 0n) parts.push(`${fmtCount(c.requested)} requested`);
  if (c.running > 0n) parts.push(`${fmtCount(c.running)} running`);
  return parts.join(" · ");
}

function field(id: string, label: string, input: HTMLElement, help?: string): HTMLElement {
  const err = h("p", { class: "field-error", id: `${id}-err`, hidden: true });
  input.setAttribute("aria-describedby", help ? `${id}-help ${id}-err` : `${id}-err`);
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    input,
    help ? h("p", { class: "help", id: `${id}-help` }, help) : null,
    err,
  );
}

/**
 * draft is the disclose form as last typed, kept across views: the form is
 * drawn again whenever the view changes (another set, the bill), and a person
 * whose disclose was refused (a cap, a lost connection) goes elsewhere to act
 * on it and comes back to resubmit. Its idempotency key goes with it, so the
 * resubmission cannot disclose twice.
 */
const draft = {
  name: "",
  commands: "",
  estimate: "",
  requestNow: false,
  noSpeculation: false,
  /** mode is "lines" (one task per line) or "array" (one command per value of a range). */
  mode: "lines",
  array: "",
  shell: "sh",
  key: "",
  formKey: "",
  /** open is whether the person opened or closed the form; undefined until they do. */
  open: undefined as boolean | undefined,
};

/**
 * discloseForm is the disclose form, folded away (so the list of sets stays
 * in view) unless the person opened it, has typed into it, or has no set yet.
 * listed tells it how many sets the list holds.
 */
function discloseForm(ctx: Ctx): { el: HTMLElement; listed(n: number): void } {
  const name = h("input", { id: "f-name", name: "name", type: "text", autocomplete: "off", placeholder: "e.g. frames 1–100" });
  const commands = h("textarea", {
    id: "f-commands",
    name: "commands",
    rows: 5,
    spellcheck: "false",
    placeholder: "./render --frame 1\n./render --frame 2",
  });
  const estimate = h("input", { id: "f-estimate", name: "estimate", type: "text", inputmode: "decimal", autocomplete: "off", placeholder: "e.g. 30s, 2m" });
  const requestNow = h("input", { id: "f-request", name: "request", type: "checkbox" });
  const noSpec = h("input", { id: "f-nospec", name: "nospec", type: "checkbox" });
  const mode = h(
    "select",
    { id: "f-mode", name: "mode" },
    h("option", { value: "lines" }, "One task per line"),
    h("option", { value: "array" }, "An array: one task per value of a range"),
  );
  const array = h("input", { id: "f-array", name: "array", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "e.g. 0-299 or 0-299:2" });
  const shell = h("select", { id: "f-shell", name: "shell" }, Shells.map((x) => h("option", { value: x }, x)));
  const submit = h("button", { type: "submit", class: "primary" }, "Disclose");
  const inputs = { name, commands, estimate, array, shell } as const;
  name.value = draft.name;
  commands.value = draft.commands;
  estimate.value = draft.estimate;
  requestNow.checked = draft.requestNow;
  noSpec.checked = draft.noSpeculation;
  mode.value = draft.mode;
  array.value = draft.array;
  shell.value = draft.shell;
  const commandsLabel = h("label", { for: "f-commands" });
  const commandsHelp = h("p", { class: "help", id: "f-commands-help" });
  const arrayField = field("f-array", "Range of values (LOW-HIGH[:STEP])", array,
    "One task per value; each sees it as $BATCH_ARRAY_VALUE, and its place in the set as $BATCH_TASK_INDEX.");
  const drawMode = () => {
    const isArray = mode.value === "array";
    arrayField.hidden = !isArray;
    commandsLabel.textContent = isArray ? "Command each task runs" : "Commands, one per line";
    commands.placeholder = isArray ? "./sim --seed $BATCH_ARRAY_VALUE" : "./render --frame 1\n./render --frame 2";
    commandsHelp.textContent = isArray
      ? `Runs as \`${shell.value} -c LINE\` once per value of the range.`
      : `Each line runs as \`${shell.value} -c LINE\` on a worker; # starts a comment.`;
  };
  drawMode();
  const keep = () => {
    draft.name = name.value;
    draft.commands = commands.value;
    draft.estimate = estimate.value;
    draft.requestNow = requestNow.checked;
    draft.noSpeculation = noSpec.checked;
    draft.mode = mode.value;
    draft.array = array.value;
    draft.shell = shell.value;
    drawMode();
  };
  const commandsField = field("f-commands", "", commands, " ");
  commandsField.querySelector("label")!.replaceWith(commandsLabel);
  commandsField.querySelector("#f-commands-help")!.replaceWith(commandsHelp);

  const form = h(
    "form",
    { id: "disclose-form", novalidate: true },
    field("f-name", "Name", name),
    h("div", { class: "form-row" },
      field("f-mode", "Tasks", mode),
      field("f-shell", "Shell", shell, "sh is dash on Debian; bash has $RANDOM, arrays and [[ ]]."),
    ),
    arrayField,
    commandsField,
    field("f-estimate", "Estimated run time per task (optional)", estimate),
    h("div", { class: "checks" },
      h("label", null, requestNow, " Request them all now (batch)"),
      h("label", null, noSpec, " No speculative copies"),
    ),
    h("div", { class: "form-actions" }, submit),
  );

  form.addEventListener("input", keep);
  form.addEventListener("change", keep);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (isDisabled(submit)) return;
    const f: DiscloseForm = {
      name: name.value,
      commands: commands.value,
      estimate: estimate.value,
      requestNow: requestNow.checked,
      noSpeculation: noSpec.checked,
      array: mode.value === "array" ? array.value : undefined,
      shell: shell.value,
    };
    // A resubmission of the same form (after an error) reuses its key, so a
    // disclose that reached the server before the answer was lost is not doubled.
    const fk = formKey(f);
    if (fk !== draft.formKey) {
      draft.formKey = fk;
      draft.key = crypto.randomUUID();
    }
    const parsed = parseDiscloseForm(f, draft.key);
    let firstBad: HTMLElement | undefined;
    for (const [k, el] of Object.entries(inputs)) {
      const msg = parsed.ok ? undefined : parsed.errors[k as keyof DiscloseForm];
      const err = form.querySelector<HTMLElement>(`#${el.id}-err`)!;
      err.textContent = msg ?? "";
      err.hidden = !msg;
      if (msg) {
        el.setAttribute("aria-invalid", "true");
        firstBad ??= el;
      } else el.removeAttribute("aria-invalid");
    }
    if (!parsed.ok) {
      firstBad?.focus();
      return;
    }
    setDisabled(submit, true);
    submit.textContent = "Disclosing…";
    try {
      const r = await ctx.clients.tasks.disclose(parsed.request, { signal: ctx.signal });
      const id = r.taskSet?.id ?? 0n;
      ctx.clearProblem();
      ctx.notify(`Disclosed ${r.count} task${r.count === 1 ? "" : "s"} as set #${id}${r.replayed ? " (already disclosed earlier)" : ""}.`, true);
      form.reset();
      Object.assign(draft, { name: "", commands: "", estimate: "", requestNow: false, noSpeculation: false, mode: "lines", array: "", shell: "sh", key: "", formKey: "" });
      drawMode();
      location.hash = `#/sets/${id}`;
    } catch (err) {
      ctx.fail(err, "Disclosing the task set");
    } finally {
      setDisabled(submit, false);
      submit.textContent = "Disclose";
    }
  });
  const typed = () => draft.name !== "" || draft.commands !== "" || draft.estimate !== "" || draft.array !== "";
  const summary = h("summary", null, h("h2", { id: "disclose-h" }, "Disclose a task set"));
  const el = h("details", { class: "card disclose", id: "disclose" }, summary, form);
  el.open = draft.open ?? typed();
  // A click (or Enter or Space) on the summary is the person's choice, kept across views.
  summary.addEventListener("click", () => {
    draft.open = !el.open;
  });
  return {
    el,
    listed(n) {
      if (draft.open === undefined && n === 0 && !el.open) el.open = true;
    },
  };
}

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

const sortKeys: [SortKey, string][] = [
  ["index", "Index, first to last"],
  ["index-desc", "Index, last to first"],
  ["state", "State: running and requested first"],
  ["service-desc", "Service time, longest first"],
  ["service", "Service time, shortest first"],
];

const columns = ["#", "Command", "State", "Progress", "Copies", "Visible response", "Service", "Exit", "Actions"];

function mountDetail(detail: HTMLElement, ctx: Ctx, setId: bigint, onSet: (ts: TaskSet) => void): void {
  const view: SetView = emptyView();
  const searcher = new Searcher();
  const awaiting = new Set<number>();
  let shownOutput: number | undefined;
  let pendingHead = false; // a request-all or cancel-the-rest call is under way
  let loaded = false; // a snapshot arrived
  let stopped = false; // the watch gave up (not found, no permission): nothing can be done here

  const title = h("h2", { id: "detail-h", tabindex: -1 }, `Task set #${setId}`);
  const sub = h("p", { class: "muted" });
  const live = h("p", { class: "live-status connecting", role: "status", id: "live-status" }, "Connecting…");
  const bar = h("div", { class: "state-bar", id: "state-bar", "aria-hidden": "true" });
  const counts = h("ul", { class: "counts", "aria-label": "Tasks by state" });
  const summary = h("p", { class: "summary" });
  const requestAll = h("button", { type: "button", id: "request-all", "aria-disabled": "true" }, "Request all");
  const cancelRest = h("button", { type: "button", id: "cancel-rest", class: "danger", "aria-disabled": "true" }, "Cancel the rest");
  const retryFailed = h(
    "button",
    { type: "button", id: "retry-failed", "aria-disabled": "true", title: "Run failed, timed-out and canceled tasks again in place: same index, next attempt" },
    "Retry failed",
  );
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
  const output = h("section", { class: "output", id: "output", hidden: true, "aria-labelledby": "output-h" });
  const whyBox = h("section", { class: "output why-box", id: "why", hidden: true, "aria-labelledby": "why-h", "aria-live": "polite" });
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
  replace(
    detail,
    h("header", { class: "detail-head" }, h("div", { class: "detail-title" }, title, sub), live),
    bar,
    counts,
    summary,
    h("div", { class: "actions" }, requestAll, retryFailed, cancelRest),
    h(
      "div",
      { class: "table-tools", role: "group", "aria-label": "Which tasks to show" },
      h("div", { class: "tool" }, h("label", { for: "f-state" }, "Show"), stateSel),
      h("div", { class: "tool tool-text" }, h("label", { for: "f-text" }, "Find"), textIn),
      h("div", { class: "tool" }, h("label", { for: "f-sort" }, "Sort by"), sortSel),
      h("div", { class: "tool tool-jump" }, nextRunning, nextFailed),
    ),
    shownNote,
    cmdNote,
    scroller,
    whyBox,
    output,
    confirm,
    confirmRetry,
  );

  // --- the order of the rows, and which rows are drawn ---------------------

  let filter: Filter = { state: "all", text: "" };
  let sort: SortKey = "index";
  let order: number[] = [];
  let orderBuiltAt = 0;
  let resortTimer: ReturnType<typeof setTimeout> | undefined;
  const rendered = new Map<number, HTMLTableRowElement>(); // rows in the DOM, by task index
  const placed = new WeakMap<HTMLTableRowElement, number>(); // where each drawn row is placed
  const stale = new Set<number>(); // drawn rows whose task changed since
  let rowH = 37; // measured from a drawn row once there is one
  let measured = false;
  let range = { start: 0, end: 0 };
  let jumped: number | undefined; // the row a jump landed on, marked until the next jump
  // Why the waiting tasks in view wait, as the scheduler last said (one Why
  // call for the rows in view, at most every whyEvery ms while such rows are drawn).
  const whys = new Map<number, TaskWhy>();
  let whyBusy = false;
  let whyAt = 0;
  let shownWhy: number | undefined; // the task whose why is open below the table

  // One redraw per animation frame at most, of what changed since the last.
  const dirty = { head: false, order: false, rows: false, window: false };
  let frame = 0;
  function schedule(what: Partial<typeof dirty>): void {
    Object.assign(dirty, Object.fromEntries(Object.entries(what).filter(([, v]) => v)));
    if (frame === 0) frame = requestAnimationFrame(redraw);
  }
  ctx.signal.addEventListener("abort", () => {
    cancelAnimationFrame(frame);
    clearTimeout(resortTimer);
    clearTimeout(headTimer);
  });

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

  function redraw(): void {
    frame = 0;
    const d = { ...dirty };
    Object.assign(dirty, { head: false, order: false, rows: false, window: false });
    if (d.order) rebuildOrder();
    if (d.order || d.rows || d.window) drawWindow();
    if (d.head) {
      headDrawnAt = performance.now();
      drawHead();
      if (view.set) onSet(view.set);
    }
  }

  function rebuildOrder(): void {
    clearTimeout(resortTimer);
    resortTimer = undefined;
    order = buildOrder(view, filter, sort, searcher);
    orderBuiltAt = performance.now();
    table.setAttribute("aria-rowcount", String(order.length + 1));
    drawShown();
  }

  function drawShown(): void {
    const total = view.tasks.size;
    const text =
      !loaded ? "" : order.length === total ? `${fmtCount(total)} task${total === 1 ? "" : "s"}` : `Showing ${fmtCount(order.length)} of ${fmtCount(total)} tasks`;
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
        schedule({ order: true });
      }, wait);
    }
    if (rows) schedule({ rows: true });
  }

  /** focusIn says where in the table the focus is, so a redraw can put it back. */
  function focusIn(): { index: number; action: string } | undefined {
    const el = document.activeElement as HTMLElement | null;
    const tr = el && tbody.contains(el) ? el.closest<HTMLTableRowElement>("tr[data-index]") : null;
    return tr ? { index: Number(tr.dataset.index), action: el!.dataset.action ?? "" } : undefined;
  }

  function refocus(tr: HTMLTableRowElement, action: string): void {
    const again = (action && tr.querySelector<HTMLElement>(`[data-action="${action}"]`)) || tr.querySelector<HTMLElement>("button") || tr.cells[0];
    again.focus({ preventScroll: true });
  }

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
        const fresh = taskRow(t, view.parts, now, i === shownOutput, i === jumped, isWaiting(t) ? whys.get(i) : undefined);
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
      emptyRow.cells[0].textContent = stopped && !loaded
        ? "The set could not be loaded: see the message above."
        : !loaded
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
      else if (!back) title.focus({ preventScroll: true });
    }
    clock();
    if (!measured && rendered.size > 0) {
      const first = rendered.values().next().value!;
      const got = first.getBoundingClientRect().height;
      measured = true;
      if (got > 0 && Math.abs(got - rowH) > 0.5) {
        rowH = got;
        for (const tr of rendered.values()) placed.delete(tr);
        schedule({ window: true });
      }
    }
  }

  scroller.addEventListener("scroll", () => schedule({ window: true }), { passive: true });
  const resized = new ResizeObserver(() => {
    measured = false; // the rows may be another height on a narrower screen
    schedule({ window: true });
  });
  resized.observe(scroller);
  ctx.signal.addEventListener("abort", () => resized.disconnect());

  // --- the filter, sort and jump tools ------------------------------------

  function refilter(): void {
    filter = { state: stateSel.value as StateFilter, text: textIn.value };
    sort = sortSel.value as SortKey;
    scroller.scrollTop = 0;
    schedule({ order: true });
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
    if (dirty.order) rebuildOrder();
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

  // --- the head: counts, the stacked bar, the set's actions ---------------

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
  let noteKey = "";

  function drawHead(): void {
    const ts = view.set;
    const blocked = !loaded || stopped;
    setDisabled(nextRunning, blocked);
    setDisabled(nextFailed, blocked);
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
      sub.textContent = `${ts.owner ? `Owner ${ts.owner} · ` : ""}created ${fmtClock(ts.createdAt)}`;
    }
    bar.hidden = !c;
    for (const g of stateSegments(c)) {
      const el = barSegs.get(g.key)!;
      const w = `${(g.fraction * 100).toFixed(3)}%`;
      if (el.style.width !== w) el.style.width = w;
      el.hidden = g.n === 0;
    }
    const n: Record<(typeof countKeys)[number], bigint | number> = {
      finished: c?.finished ?? 0n,
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
      `${plural(c?.total ?? 0n, "task")} · mean visible response ${c && c.finished > 0n ? fmtDuration(ts.meanVisibleResponseSeconds) : "—"}` +
        ` · billed ${fmtNumber(ts.billedSlotSeconds)} slot-seconds`,
    );
    setText(cancelRest, rest > 0 ? `Cancel the rest (${fmtCount(rest)})` : "Cancel the rest");
    setDisabled(cancelRest, rest === 0 || pendingHead || blocked);
    setDisabled(requestAll, rest === 0 || pendingHead || blocked);
    const again = retryCount(view);
    setText(retryFailed, again > 0 ? `Retry failed (${fmtCount(again)})` : "Retry failed");
    setDisabled(retryFailed, again === 0 || pendingHead || blocked);
    const sh = view.parts.shared();
    const env = view.parts.varyingEnv();
    const nk = sh ? `${sh.prefix}\t${sh.suffix}\t${env.join(",")}` : "";
    if (nk !== noteKey) {
      noteKey = nk;
      cmdNote.hidden = !sh;
      if (sh) {
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

  function afterUpdate(indexes: Iterable<number>): void {
    if (awaiting.size === 0) return;
    for (const i of indexes) {
      const t = view.tasks.get(i);
      if (t && awaiting.has(i) && t.state === TaskState.FINISHED) {
        awaiting.delete(i);
        void showOutput(i);
      } else if (t && awaiting.has(i) && t.state === TaskState.CANCELED) awaiting.delete(i);
    }
  }

  /** redrawRow draws one task's row again now, if it is drawn. */
  function redrawRow(i: number | undefined): HTMLTableRowElement | undefined {
    if (i === undefined || !rendered.has(i)) return undefined;
    stale.add(i);
    drawWindow();
    return rendered.get(i);
  }

  async function act(action: string, index: number, button: HTMLButtonElement): Promise<void> {
    if (isDisabled(button)) return;
    setDisabled(button, true);
    try {
      if (action === "request") {
        awaiting.add(index);
        await ctx.clients.tasks.request({ setId, indexes: [index] }, { signal: ctx.signal });
        ctx.notify(`Requested task ${index} of set #${setId}; its output opens when it finishes.`);
        afterUpdate([index]);
      } else if (action === "cancel") {
        const r = await ctx.clients.tasks.cancel({ setId, indexes: [index] }, { signal: ctx.signal });
        ctx.notify(r.stopped > 0 ? `Stopped task ${index} of set #${setId} (billed for what it used).` : `Canceled task ${index} of set #${setId}.`);
      } else if (action === "retry") {
        const r = await ctx.clients.tasks.retry({ setId, indexes: [index] }, { signal: ctx.signal });
        const t = r.tasks[0];
        ctx.notify(`Retrying task ${index} of set #${setId} in place${t ? ` as attempt ${t.attempt}` : ""}.`);
      } else if (action === "output") {
        await showOutput(index);
        return;
      } else if (action === "attempts") {
        await showDetail(index);
      } else if (action === "why") {
        showWhy(index);
        return;
      }
      ctx.clearProblem();
    } catch (err) {
      awaiting.delete(index);
      const what = { request: "Requesting", cancel: "Canceling", retry: "Retrying" }[action] ?? "Reading the output of";
      ctx.fail(err, `${what} task ${index}`);
    } finally {
      setDisabled(button, false);
    }
  }

  tbody.addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-action]");
    if (!b) return;
    const tr = b.closest("tr")!;
    void act(b.dataset.action!, Number(tr.dataset.index), b);
  });

  requestAll.addEventListener("click", async () => {
    if (isDisabled(requestAll)) return;
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
  });

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
      const r = await ctx.clients.tasks.cancel({ setId }, { signal: ctx.signal });
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
          redrawRow(index)?.querySelector<HTMLElement>("[data-action=why]")?.focus();
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
    const dur = (s: number) => (s >= 0 ? `~${fmtDuration(s)}` : "unknown");
    const rows: [string, string, string][] = [
      ["Reason", "why-reason", w.reasonText],
      ["Class", "why-class", w.class],
      ["Position in its set", "why-position", String(w.position)],
      ["Sets ahead", "why-jobs", String(w.jobsAhead)],
      ["Tasks ahead", "why-ahead", `${fmtCount(w.tasksAhead)}${w.exact ? "" : " or more"}`],
      ["Starts in", "why-start", dur(w.startInSeconds)],
      ["Finishes in", "why-finish", dur(w.finishInSeconds)],
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

  async function showOutput(index: number): Promise<void> {
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) if (i !== undefined && rendered.has(i)) stale.add(i);
    drawWindow();
    output.hidden = false;
    replace(output, h("h3", { id: "output-h" }, `Output of task ${index}`), h("p", { class: "muted" }, "Loading…"));
    try {
      const r = await ctx.clients.tasks.getOutput({ setId, index }, { signal: ctx.signal });
      if (shownOutput !== index) return;
      drawOutput(index, r);
      const t = view.tasks.get(index);
      if (t && t.attempt > 1) await showAttempts(index);
    } catch (err) {
      replace(output, h("h3", { id: "output-h" }, `Output of task ${index}`), h("p", null, "Not available."));
      ctx.fail(err, `Reading the output of task ${index}`);
    }
  }

  function drawOutput(index: number, r: GetOutputResponse): void {
    const dec = new TextDecoder();
    const streams = (["stdout", "stderr"] as const).map((name) => {
      const bytes = name === "stdout" ? r.stdout : r.stderr;
      const size = Number(name === "stdout" ? r.stdoutSize : r.stderrSize);
      const cut = name === "stdout" ? r.stdoutTruncated : r.stderrTruncated;
      const notes: string[] = [size === 0 ? "empty" : fmtBytes(size)];
      if (bytes.length < size) notes.push(`showing the first ${fmtBytes(bytes.length)}`);
      if (cut) notes.push("cut at the server's output cap");
      const dl = h("button", { type: "button", class: "link", "data-download": name }, `Download ${name}`);
      dl.addEventListener("click", () => void download(index, name, r, dl));
      return h(
        "div",
        { class: "stream" },
        h("div", { class: "stream-head" }, h("h4", null, name), h("span", { class: "muted" }, notes.join(" · ")), size > 0 ? dl : null),
        size > 0 ? h("pre", { tabindex: 0, id: `out-${name}`, "aria-label": `${name} of task ${index}` }, dec.decode(bytes)) : null,
      );
    });
    replace(
      output,
      h(
        "div",
        { class: "output-head" },
        h("h3", { id: "output-h" }, `Output of task ${index}`),
        h(
          "button",
          {
            type: "button",
            class: "link",
            onclick: () => {
              output.hidden = true;
              const was = shownOutput;
              shownOutput = undefined;
              redrawRow(was)?.querySelector<HTMLElement>("[data-action=output]")?.focus();
            },
          },
          "Close",
        ),
      ),
      h(
        "dl",
        { class: "meta" },
        h("dt", null, "Exit code"),
        h("dd", { id: "out-exit" }, `${r.exitCode}${r.timedOut ? " (timed out)" : ""}`),
        h("dt", null, "CPU"),
        h("dd", null, fmtDuration(r.cpuSeconds)),
        h("dt", null, "Slot time"),
        h("dd", null, fmtDuration(r.slotSeconds)),
        h("dt", null, "Copy"),
        h("dd", null, `#${r.copyId} on ${r.worker || "?"}`),
      ),
      streams,
    );
  }

  /** showDetail opens the panel on one task's attempts and copies, without its output. */
  async function showDetail(index: number): Promise<void> {
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) if (i !== undefined && rendered.has(i)) stale.add(i);
    drawWindow();
    output.hidden = false;
    const close = h("button", { type: "button", class: "link" }, "Close");
    close.addEventListener("click", () => {
      output.hidden = true;
      const was = shownOutput;
      shownOutput = undefined;
      redrawRow(was)?.querySelector<HTMLElement>("[data-action=attempts]")?.focus();
    });
    replace(output, h("div", { class: "output-head" }, h("h3", { id: "output-h" }, `Task ${index} in detail`), close));
    try {
      await showAttempts(index);
    } catch (err) {
      output.append(h("p", null, "Not available."));
      ctx.fail(err, `Reading the attempts of task ${index}`);
    }
  }

  /** showAttempts adds the task's earlier attempts and every copy of each to the output panel. */
  async function showAttempts(index: number): Promise<void> {
    const r = await ctx.clients.tasks.getTask({ setId, index }, { signal: ctx.signal });
    const t = r.task;
    if (shownOutput !== index || !t) return;
    const exitText = (exit: number, timedOut: boolean, shown: boolean) => (shown ? `${exit}${timedOut ? " (timed out)" : ""}` : "—");
    const rows = t.attempts.map((a) =>
      h(
        "tr",
        null,
        h("td", { class: "num" }, a.attempt),
        h("td", null, a.lost ? "lost" : taskStateName(a.state)),
        h("td", { class: "num" }, exitText(a.exitCode, a.timedOut, a.state === TaskState.FINISHED)),
        h("td", null, a.retriedBy || "—"),
        h("td", null, fmtClock(a.retriedAt)),
      ),
    );
    rows.push(
      h(
        "tr",
        { class: "current" },
        h("td", { class: "num" }, `${t.attempt} (current)`),
        h("td", null, taskStateName(t.state)),
        h("td", { class: "num" }, exitText(t.exitCode, t.timedOut, t.state === TaskState.FINISHED)),
        h("td", null, "—"),
        h("td", null, "—"),
      ),
    );
    const copies = t.copies.map((c) =>
      h(
        "tr",
        null,
        h("td", { class: "num" }, `#${c.id}${c.speculative ? " spec" : ""}`),
        h("td", { class: "num" }, c.attempt),
        h("td", null, `${c.worker || "?"}/${c.slot}`),
        h("td", null, copyStateName(c.state)),
        h("td", null, fmtClock(c.startedAt)),
        h("td", null, c.endedAt ? fmtClock(c.endedAt) : "—"),
        h("td", { class: "num" }, c.state === CopyState.RUNNING || c.state === CopyState.SUSPENDED ? "—" : String(c.exitCode)),
        h("td", { class: "num" }, c.signal ? String(c.signal) : "—"),
        h("td", null, c.timedOut ? "yes" : "—"),
        h("td", { class: "num" }, c.progress >= 0 ? fmtPercent(c.progress) : "—"),
      ),
    );
    const head = (...cols: string[]) => h("thead", null, h("tr", null, cols.map((c) => h("th", { scope: "col" }, c))));
    output.append(
      h(
        "section",
        { class: "attempts", id: "attempts", "aria-labelledby": "attempts-h" },
        h("h4", { id: "attempts-h" }, `Attempts of task ${index}`),
        h("table", { class: "attempts-table" }, head("Attempt", "State", "Exit", "Retried by", "Retried at"), h("tbody", null, rows)),
        h("h4", null, "Copies"),
        h(
          "table",
          { class: "attempts-table" },
          head("Copy", "Attempt", "Worker/slot", "State", "Started", "Ended", "Exit", "Signal", "Timed out", "Progress"),
          h("tbody", null, copies),
        ),
      ),
    );
  }

  async function download(index: number, name: "stdout" | "stderr", first: GetOutputResponse, b: HTMLButtonElement): Promise<void> {
    const size = Number(name === "stdout" ? first.stdoutSize : first.stderrSize);
    const parts: Uint8Array[] = [name === "stdout" ? first.stdout : first.stderr];
    let got = parts[0].length;
    if (isDisabled(b)) return;
    setDisabled(b, true);
    try {
      while (got < size) {
        const r = await ctx.clients.tasks.getOutput({ setId, index, offset: BigInt(got), limit: BigInt(outputPage) }, { signal: ctx.signal });
        const chunk = name === "stdout" ? r.stdout : r.stderr;
        if (chunk.length === 0) break;
        parts.push(chunk);
        got += chunk.length;
      }
      const url = URL.createObjectURL(new Blob(parts as BlobPart[], { type: "text/plain" }));
      const a = h("a", { href: url, download: outputFileName(setId, index, name), hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      ctx.fail(err, `Downloading ${name} of task ${index}`);
    } finally {
      setDisabled(b, false);
    }
  }

  // The time a requested task has waited ticks in the rows in view; the
  // clock runs only while such a row is drawn (a timer is a wake-up).
  let ticker: ReturnType<typeof setInterval> | undefined;
  function tick(): void {
    const now = ctx.now();
    for (const td of tbody.querySelectorAll<HTMLElement>("td[data-since]")) {
      td.textContent = `${fmtDuration(Math.max(0, now - Number(td.dataset.since)))} so far`;
    }
  }
  function clock(): void {
    const need = tbody.querySelector("td[data-since]") !== null;
    if (need && ticker === undefined) ticker = setInterval(tick, 1000);
    else if (!need && ticker !== undefined) {
      clearInterval(ticker);
      ticker = undefined;
    }
    const waiting = tbody.querySelector("tr[data-waiting]") !== null;
    if (waiting && whyTicker === undefined) {
      whyTicker = setInterval(() => void askWhy(), whyEvery);
      // Rows that just came into view are asked about soon, not at the next tick.
      setTimeout(() => void askWhy(), 300);
    } else if (!waiting && whyTicker !== undefined) {
      clearInterval(whyTicker);
      whyTicker = undefined;
    }
  }
  ctx.signal.addEventListener("abort", () => {
    clearInterval(ticker);
    clearInterval(whyTicker);
  });

  let whyTicker: ReturnType<typeof setInterval> | undefined;
  /** askWhy asks the scheduler why the waiting tasks in view wait: one call, at most one at a time and one per whyEvery. */
  async function askWhy(now = false): Promise<void> {
    if (whyBusy || document.hidden || (!now && Date.now() - whyAt < whyEvery - 500)) return;
    const idx: number[] = [];
    if (shownWhy !== undefined && !rendered.has(shownWhy)) idx.push(shownWhy);
    for (const [i, tr] of rendered) if (tr.dataset.waiting !== undefined) idx.push(i);
    if (idx.length === 0) return;
    whyBusy = true;
    whyAt = Date.now();
    try {
      const r = await ctx.clients.tasks.why({ setId, indexes: idx.slice(0, 1000) }, { signal: ctx.signal });
      for (const w of r.tasks) {
        whys.set(w.index, w);
        if (rendered.has(w.index)) stale.add(w.index);
      }
      schedule({ window: true });
      drawWhy();
    } catch {
      // The next tick asks again; the rows keep their last answer.
    } finally {
      whyBusy = false;
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
        loaded = true;
        searcher.reset();
        for (const i of rendered.keys()) stale.add(i);
      }
      if (change.all) {
        schedule({ order: true, head: true });
        afterUpdate(view.tasks.keys());
      } else {
        tasksChanged(change.indexes);
        afterUpdate(change.indexes);
        scheduleHead();
      }
      if (shownWhy !== undefined) drawWhy();
    },
    (s) => {
      const { text, cls } = statusText(s);
      live.textContent = text;
      live.className = `live-status ${cls}`;
      if (s.kind === "stopped") {
        stopped = true;
        ctx.problem(s.problem);
        schedule({ head: true, window: true });
      }
    },
    ctx.signal,
  );
  schedule({ window: true });
}

/** whyEvery is how often, in ms, the page asks why the waiting tasks in view wait. */
const whyEvery = 5000;

/** isWaiting says whether a task waits for a slot: requested or disclosed, with no copy running. */
function isWaiting(t: Task): boolean {
  return (t.state === TaskState.REQUESTED || t.state === TaskState.DISCLOSED) && !t.copies.some((c) => c.state === CopyState.RUNNING);
}

/** whyNote is the scheduler's answer for a waiting task: the reason, its place in line and when it should start. */
function whyNote(w: TaskWhy): HTMLElement | null {
  if (w.reasonText === "" || w.class === "") return null;
  // The column is narrow: the start estimate first, the rest in the tooltip.
  const line: string[] = [w.startInSeconds >= 0 ? `starts ~${fmtDuration(w.startInSeconds)}` : "start unknown", w.reasonText];
  if (w.tasksAhead > 0n) line.push(`${fmtCount(w.tasksAhead)}${w.exact ? "" : "+"} ahead`);
  const detail = [
    line.join(" · "),
    `Class: ${w.class}`,
    `Position in its set: ${w.position}; sets ahead: ${w.jobsAhead}`,
    w.finishInSeconds >= 0 ? `Finishes in ~${fmtDuration(w.finishInSeconds)}` : "",
    w.assumptions ? `Assuming ${w.assumptions}` : "",
  ].filter((x) => x !== "").join("\n");
  return h("button", { type: "button", class: "link why", "data-action": "why", title: detail, "aria-label": `Why task ${w.index} waits: ${line.join(", ")}` }, line.join(" · "));
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
  if (t.copies.length === 0) return "—";
  const shown = t.copies.slice(-3);
  return h(
    "ul",
    { class: "copies" },
    t.copies.length > shown.length ? h("li", { class: "muted" }, `+${t.copies.length - shown.length} earlier`) : null,
    shown.map((c) =>
      h(
        "li",
        {
          class: `copy copy-${copyStateName(c.state)}${c.speculative ? " speculative" : ""}`,
          title: `${c.speculative ? "Speculative copy" : "Original copy"} ${copyLabel(c)}, started ${fmtClock(c.startedAt)}`,
        },
        // The space keeps "spec" a word of its own for screen readers and copy-paste.
        c.speculative ? [h("span", { class: "spec-mark" }, "spec"), " "] : null,
        `${c.worker || "?"}/${c.slot} ${copyStateName(c.state)}`,
        c.state === CopyState.RUNNING && c.progress >= 0 ? ` ${fmtPercent(c.progress)}` : "",
      ),
    ),
  );
}

/** taskRow draws one task as a table row of one line; its command shows the part that differs from the others'. */
function taskRow(t: Task, parts: CommandParts, now: number, outputShown: boolean, jumped: boolean, why: TaskWhy | undefined): HTMLTableRowElement {
  const state = taskStateName(t.state);
  const cmd = commandText(t.spec);
  const shown = parts.varying(t.spec);
  const vr = visibleResponse(t, now);
  const req = tsSeconds(t.requestedAt);
  const actions: HTMLElement[] = [];
  if (isRequestable(t)) actions.push(h("button", { type: "button", "data-action": "request" }, "Request"));
  if (t.state === TaskState.FINISHED) {
    actions.push(h("button", { type: "button", "data-action": "output", "aria-pressed": outputShown ? "true" : "false" }, "Output"));
  }
  if (isRetryable(t)) {
    actions.push(h("button", { type: "button", "data-action": "retry", title: "Run this task again in place: same index, next attempt" }, "Retry"));
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
        },
        stop ? "Stop" : "Cancel",
      ),
    );
  }
  return h(
    "tr",
    { role: "row", "data-index": t.index, "data-state": state, class: jumped ? "jumped" : undefined, "data-waiting": isWaiting(t) ? "" : undefined },
    h("td", { role: "cell", class: "num", tabindex: -1 }, t.index),
    h("td", { role: "cell", class: "cmd" }, h("code", { title: cmd }, shown)),
    h(
      "td",
      { role: "cell", "data-col": "state" },
      h("span", { class: `badge state-${state}` }, state),
      isFailed(t) ? h("span", { class: "failed-mark" }, t.timedOut ? " timed out" : " failed") : t.timedOut ? h("span", { class: "muted" }, " timed out") : null,
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
