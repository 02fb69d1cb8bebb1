// The task sets view: disclose form, list of sets, and one set watched live.

import { Backoff } from "../backoff";
import { formKey, parseDiscloseForm } from "../form";
import type { DiscloseForm } from "../form";
import {
  commandText,
  copyLabel,
  copyStateName,
  fmtBytes,
  fmtClock,
  fmtDuration,
  fmtNumber,
  fmtPercent,
  outputFileName,
  taskStateName,
  tsSeconds,
} from "../format";
import type { GetOutputResponse } from "../gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "../gen/batch/v1/types_pb";
import type { Task, TaskSet } from "../gen/batch/v1/types_pb";
import { applyWatch, emptyView, isCancelable, isRequestable, restCount, sortedTasks, visibleResponse } from "../state";
import type { SetView } from "../state";
import { runWatch, sleep, statusText } from "../watch";
import type { Ctx } from "./context";
import { h, isDisabled, replace, setDisabled } from "./dom";

const outputPage = 4 << 20;

/** rowsPerPage bounds the rows drawn at once: a huge set stays responsive, the rest is one click away. */
const rowsPerPage = 500;

/** mountSets draws the task sets view into root; setId selects the set to watch. */
export function mountSets(root: HTMLElement, ctx: Ctx, setId: bigint | undefined): void {
  const list = h("ul", { class: "set-list", id: "set-list" });
  const listNote = h("p", { class: "muted" }, "Loading…");
  const detail = h("section", { class: "detail card", id: "set-detail", "aria-labelledby": "detail-h" });
  root.append(
    h(
      "div",
      { class: "layout" },
      h(
        "aside",
        { class: "side" },
        discloseForm(ctx),
        h(
          "section",
          { class: "card", "aria-labelledby": "sets-h" },
          h("h2", { id: "sets-h" }, "Your task sets"),
          listNote,
          list,
        ),
      ),
      detail,
    ),
  );

  let sets: TaskSet[] = [];
  let listFailing = false;
  function drawList(): void {
    listNote.textContent = sets.length === 0 ? "None yet: disclose one above." : "";
    listNote.hidden = sets.length > 0;
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
            h("span", { class: "muted" }, setLine(ts)),
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
      if (listFailing) ctx.clearProblem();
      listFailing = false;
    } catch (err) {
      listNote.textContent = "Could not load the list.";
      listNote.hidden = false;
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
    const i = sets.findIndex((x) => x.id === ts.id);
    if (i >= 0) {
      sets[i] = ts;
      drawList();
    }
  });
}

/** plural is "1 task", "2 tasks". */
function plural(n: number | bigint, noun: string): string {
  return `${n} ${noun}${n === 1 || n === 1n ? "" : "s"}`;
}

function setLine(ts: TaskSet): string {
  const c = ts.counts;
  if (!c) return `#${ts.id}`;
  const parts = [`#${ts.id}`, plural(c.total, "task")];
  if (c.finished > 0n) parts.push(`${c.finished} finished`);
  if (c.requested > 0n) parts.push(`${c.requested} requested`);
  if (c.running > 0n) parts.push(`${c.running} running`);
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
const draft = { name: "", commands: "", estimate: "", requestNow: false, noSpeculation: false, key: "", formKey: "" };

function discloseForm(ctx: Ctx): HTMLElement {
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
  const submit = h("button", { type: "submit", class: "primary" }, "Disclose");
  const inputs = { name, commands, estimate } as const;
  name.value = draft.name;
  commands.value = draft.commands;
  estimate.value = draft.estimate;
  requestNow.checked = draft.requestNow;
  noSpec.checked = draft.noSpeculation;
  const keep = () => {
    draft.name = name.value;
    draft.commands = commands.value;
    draft.estimate = estimate.value;
    draft.requestNow = requestNow.checked;
    draft.noSpeculation = noSpec.checked;
  };

  const form = h(
    "form",
    { id: "disclose-form", novalidate: true },
    field("f-name", "Name", name),
    field("f-commands", "Commands, one per line", commands, "Each line runs as `sh -c LINE` on a worker; # starts a comment."),
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
      Object.assign(draft, { name: "", commands: "", estimate: "", requestNow: false, noSpeculation: false, key: "", formKey: "" });
      location.hash = `#/sets/${id}`;
    } catch (err) {
      ctx.fail(err, "Disclosing the task set");
    } finally {
      setDisabled(submit, false);
      submit.textContent = "Disclose";
    }
  });
  return h("section", { class: "card", "aria-labelledby": "disclose-h" }, h("h2", { id: "disclose-h" }, "Disclose a task set"), form);
}

function mountDetail(detail: HTMLElement, ctx: Ctx, setId: bigint, onSet: (ts: TaskSet) => void): void {
  let view: SetView = emptyView();
  const rows = new Map<number, HTMLTableRowElement>();
  const awaiting = new Set<number>();
  let shownOutput: number | undefined;
  let pendingHead = false; // a request-all or cancel-the-rest call is under way

  const title = h("h2", { id: "detail-h", tabindex: -1 }, `Task set #${setId}`);
  const sub = h("p", { class: "muted" });
  const live = h("p", { class: "live-status connecting", role: "status", id: "live-status" }, "Connecting…");
  const counts = h("ul", { class: "counts", "aria-label": "Tasks by state" });
  const summary = h("p", { class: "summary" });
  const requestAll = h("button", { type: "button", id: "request-all" }, "Request all");
  const cancelRest = h("button", { type: "button", id: "cancel-rest", class: "danger" }, "Cancel the rest");
  const tbody = h("tbody");
  const output = h("section", { class: "output", id: "output", hidden: true, "aria-labelledby": "output-h" });
  replace(
    detail,
    h("header", { class: "detail-head" }, h("div", null, title, sub), live),
    counts,
    summary,
    h("div", { class: "actions" }, requestAll, cancelRest),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "tasks", id: "tasks" },
        h("caption", { class: "sr-only" }, "Tasks of the set, in set order"),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["#", "Command", "State", "Progress", "Copies", "Visible response", "Service", "Exit", "Actions"].map((c) =>
              h("th", { scope: "col" }, c),
            ),
          ),
        ),
        tbody,
      ),
    ),
    output,
  );

  function drawHead(): void {
    const ts = view.set;
    if (!ts) return;
    title.textContent = `${ts.name || "(unnamed)"} `;
    title.append(h("span", { class: "muted" }, `#${ts.id}`));
    sub.textContent = `${ts.owner ? `Owner ${ts.owner} · ` : ""}created ${fmtClock(ts.createdAt)}`;
    const c = ts.counts;
    replace(
      counts,
      c
        ? (
            [
              ["disclosed", c.disclosed],
              ["executed", c.executed],
              ["requested", c.requested],
              ["finished", c.finished],
              ["canceled", c.canceled],
              ["running", c.running],
            ] as const
          ).map(([k, n]) => h("li", { class: `badge state-${k}`, "data-count": k }, `${n} ${k}`))
        : null,
    );
    summary.textContent =
      `${plural(c?.total ?? 0n, "task")} · mean visible response ${c && c.finished > 0n ? fmtDuration(ts.meanVisibleResponseSeconds) : "—"}` +
      ` · billed ${fmtNumber(ts.billedSlotSeconds)} slot-seconds`;
    const rest = restCount(view);
    cancelRest.textContent = rest > 0 ? `Cancel the rest (${rest})` : "Cancel the rest";
    setDisabled(cancelRest, rest === 0 || pendingHead);
    setDisabled(requestAll, rest === 0 || pendingHead);
  }

  /** focusIn says where in the table the focus is, so a redraw can put it back. */
  function focusIn(): { index: number; action: string } | undefined {
    const el = document.activeElement as HTMLElement | null;
    const tr = el && tbody.contains(el) ? el.closest<HTMLTableRowElement>("tr[data-index]") : null;
    return tr ? { index: Number(tr.dataset.index), action: el!.dataset.action ?? "" } : undefined;
  }

  function refocus(tr: HTMLTableRowElement, action: string): void {
    const again = (action && tr.querySelector<HTMLElement>(`[data-action="${action}"]`)) || tr.querySelector<HTMLElement>("button") || tr.cells[0];
    again.focus();
  }

  function drawRow(t: Task): HTMLTableRowElement {
    const old = rows.get(t.index);
    const f = focusIn();
    const tr = taskRow(t, ctx.now(), t.index === shownOutput);
    if (old) old.replaceWith(tr);
    rows.set(t.index, tr);
    if (old && f?.index === t.index) refocus(tr, f.action);
    return tr;
  }

  let shown = rowsPerPage;
  function drawAll(): void {
    const f = focusIn();
    const tasks = sortedTasks(view);
    rows.clear();
    replace(tbody, tasks.slice(0, shown).map((t) => drawRow(t)));
    const back = f && rows.get(f.index);
    if (back) refocus(back, f.action);
    if (tasks.length === 0) tbody.append(h("tr", null, h("td", { colspan: 9, class: "muted" }, "This set has no tasks.")));
    if (tasks.length > shown) {
      const more = h(
        "button",
        {
          type: "button",
          id: "more-tasks",
          onclick: () => {
            shown += rowsPerPage;
            drawAll();
            rows.get(tasks[shown - rowsPerPage]?.index ?? -1)?.querySelector<HTMLElement>("button, td")?.focus();
          },
        },
        `Show ${Math.min(rowsPerPage, tasks.length - shown)} more`,
      );
      tbody.append(h("tr", null, h("td", { colspan: 9, class: "muted" }, `Showing ${shown} of ${tasks.length} tasks. `, more)));
    }
  }

  function afterUpdate(indexes: Iterable<number>): void {
    for (const i of indexes) {
      const t = view.tasks.get(i);
      if (t && awaiting.has(i) && t.state === TaskState.FINISHED) {
        awaiting.delete(i);
        void showOutput(i);
      } else if (t && awaiting.has(i) && t.state === TaskState.CANCELED) awaiting.delete(i);
    }
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
      } else if (action === "output") {
        await showOutput(index);
        return;
      }
      ctx.clearProblem();
    } catch (err) {
      awaiting.delete(index);
      ctx.fail(err, `${action === "request" ? "Requesting" : action === "cancel" ? "Canceling" : "Reading the output of"} task ${index}`);
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
  cancelRest.addEventListener("click", async () => {
    if (isDisabled(cancelRest)) return;
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
  });

  async function showOutput(index: number): Promise<void> {
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) {
      const t = i === undefined ? undefined : view.tasks.get(i);
      if (t && rows.has(t.index)) drawRow(t);
    }
    output.hidden = false;
    replace(output, h("h3", { id: "output-h" }, `Output of task ${index}`), h("p", { class: "muted" }, "Loading…"));
    try {
      const r = await ctx.clients.tasks.getOutput({ setId, index }, { signal: ctx.signal });
      if (shownOutput !== index) return;
      drawOutput(index, r);
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
              const t = was === undefined ? undefined : view.tasks.get(was);
              if (t && rows.has(t.index)) drawRow(t).querySelector<HTMLElement>("[data-action=output]")?.focus();
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

  const ticker = setInterval(() => {
    const now = ctx.now();
    for (const td of tbody.querySelectorAll<HTMLElement>("td[data-since]")) {
      td.textContent = `${fmtDuration(Math.max(0, now - Number(td.dataset.since)))} so far`;
    }
  }, 1000);
  ctx.signal.addEventListener("abort", () => clearInterval(ticker));

  void runWatch(
    setId,
    {
      open: (id, signal) => ctx.clients.tasks.watchTaskSet({ setId: id }, { signal }),
      sleep,
      backoff: new Backoff(),
    },
    (m) => {
      const r = applyWatch(view, m);
      view = r.view;
      if (r.change.all) {
        drawAll();
        afterUpdate(view.tasks.keys());
      } else {
        for (const i of r.change.indexes) {
          const t = view.tasks.get(i);
          if (t && rows.has(i)) drawRow(t); // rows past the shown page are drawn when shown
        }
        afterUpdate(r.change.indexes);
      }
      drawHead();
      if (view.set) onSet(view.set);
    },
    (s) => {
      const { text, cls } = statusText(s);
      live.textContent = text;
      live.className = `live-status ${cls}`;
      if (s.kind === "stopped") ctx.problem(s.problem);
    },
    ctx.signal,
  );
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
  const shown = t.copies.slice(-4);
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

/** taskRow draws one task as a table row. */
function taskRow(t: Task, now: number, outputShown: boolean): HTMLTableRowElement {
  const state = taskStateName(t.state);
  const cmd = commandText(t.spec);
  const vr = visibleResponse(t, now);
  const req = tsSeconds(t.requestedAt);
  const actions: HTMLElement[] = [];
  if (isRequestable(t)) actions.push(h("button", { type: "button", "data-action": "request" }, "Request"));
  if (t.state === TaskState.FINISHED) {
    actions.push(h("button", { type: "button", "data-action": "output", "aria-pressed": outputShown ? "true" : "false" }, "Output"));
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
    { "data-index": t.index, "data-state": state },
    h("td", { class: "num", tabindex: -1 }, t.index),
    h("td", { class: "cmd" }, h("code", { title: cmd }, cmd)),
    h("td", { "data-col": "state" }, h("span", { class: `badge state-${state}` }, state), t.timedOut ? h("span", { class: "muted" }, " timed out") : null),
    h("td", { "data-col": "progress" }, progressCell(t)),
    h("td", { "data-col": "copies" }, copiesCell(t)),
    h(
      "td",
      { "data-col": "response", class: "num", "data-since": vr && !vr.final && req !== undefined ? String(req) : undefined },
      vr ? (vr.final ? fmtDuration(vr.seconds) : `${fmtDuration(vr.seconds)} so far`) : "—",
    ),
    h("td", { class: "num" }, t.state === TaskState.FINISHED || t.state === TaskState.EXECUTED ? fmtDuration(t.serviceSeconds) : "—"),
    h("td", { class: "num", "data-col": "exit" }, t.state === TaskState.FINISHED ? String(t.exitCode) : "—"),
    h("td", { class: "actions" }, actions),
  );
}
