// The disclose form: a new task set from a name and commands (one per line,
// or one command over an array range), kept as typed across views with its
// idempotency key, so a refused disclose can be fixed and resubmitted once.

import { formKey, parseDiscloseForm, Shells } from "../form";
import { emptyOptions } from "../formopts";
import type { OptionsForm } from "../formopts";
import type { DiscloseForm } from "../form";
import type { Ctx } from "./context";
import { h, isDisabled, setDisabled } from "./dom";

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
  keep: "",
  opts: emptyOptions(),
  key: "",
  formKey: "",
  /** open is whether the person opened or closed the form; undefined until they do. */
  open: undefined as boolean | undefined,
};

/**
 * discloseForm is the disclose form, open unless the person folded it away
 * (a choice kept across views).
 */
export function discloseForm(ctx: Ctx): { el: HTMLElement } {
  const name = h("input", { id: "f-name", name: "name", type: "text", autocomplete: "off", placeholder: "e.g. frames 1–100" });
  const commands = h("textarea", {
    id: "f-commands",
    name: "commands",
    rows: 5,
    spellcheck: "false",
    placeholder: "./render --frame 1\n./render --frame 2",
  });
  const estimate = h("input", { id: "f-estimate", name: "estimate", type: "text", inputmode: "decimal", autocomplete: "off", placeholder: "e.g. 30s, 2m" });
  const keepFiles = h("input", { id: "f-keep", name: "keep", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "e.g. result.txt out/*.csv" });
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
  const opt = optionInputs();
  const inputs = { name, commands, estimate, array, shell, keep: keepFiles, ...opt.inputs } as const;
  opt.set(draft.opts);
  name.value = draft.name;
  commands.value = draft.commands;
  estimate.value = draft.estimate;
  requestNow.checked = draft.requestNow;
  noSpec.checked = draft.noSpeculation;
  mode.value = draft.mode;
  array.value = draft.array;
  shell.value = draft.shell;
  keepFiles.value = draft.keep;
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
    draft.keep = keepFiles.value;
    draft.opts = opt.get();
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
    field("f-keep", "Files to keep (optional)", keepFiles,
      "Globs relative to the task's scratch directory, separated by spaces; matching files come with the output."),
    h("div", { class: "checks" },
      h("label", null, requestNow, " Request them all now (batch)"),
      h("label", null, noSpec, " No speculative copies"),
    ),
    opt.el,
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
      keep: keepFiles.value,
      opts: opt.get(),
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
      const msg = parsed.ok ? undefined : parsed.errors[k as keyof DiscloseForm | keyof OptionsForm];
      const err = form.querySelector<HTMLElement>(`#${el.id}-err`)!;
      err.textContent = msg ?? "";
      err.hidden = !msg;
      if (msg) {
        el.setAttribute("aria-invalid", "true");
        firstBad ??= el;
      } else el.removeAttribute("aria-invalid");
    }
    if (!parsed.ok) {
      if (firstBad && opt.el.contains(firstBad)) opt.el.open = true;
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
      Object.assign(draft, { name: "", commands: "", estimate: "", requestNow: false, noSpeculation: false, mode: "lines", array: "", shell: "sh", keep: "", opts: emptyOptions(), key: "", formKey: "" });
      drawMode();
      location.hash = `#/sets/${id}`;
    } catch (err) {
      ctx.fail(err, "Disclosing the task set");
    } finally {
      setDisabled(submit, false);
      submit.textContent = "Disclose";
    }
  });
  const summary = h("summary", null, h("h2", { id: "disclose-h" }, "Disclose a task set"));
  const el = h("details", { class: "card disclose", id: "disclose" }, summary, form);
  el.open = draft.open ?? true;
  // A click (or Enter or Space) on the summary is the person's choice, kept across views.
  summary.addEventListener("click", () => {
    draft.open = !el.open;
  });
  return { el };
}

/**
 * optionInputs are the form's options beyond the commands, as batchctl
 * disclose's flags: retries, timeout, max running, resources, the stop
 * rule, what the set waits for, and labels. They fold away under one
 * summary (open when any is set), in columns that use the wide pane.
 */
function optionInputs(): { el: HTMLDetailsElement; inputs: Record<string, HTMLInputElement>; get(): OptionsForm; set(o: OptionsForm): void } {
  const text = (id: string, placeholder: string, mode?: string) =>
    h("input", { id, type: "text", autocomplete: "off", spellcheck: "false", placeholder, inputmode: mode });
  const inputs = {
    retries: text("f-retries", "0", "numeric"),
    retryOn: text("f-retry-on", "nonzero,timeout"),
    timeout: text("f-timeout", "e.g. 10m"),
    maxRunning: text("f-max-running", "no cap", "numeric"),
    cpus: text("f-cpus", "1", "numeric"),
    memory: text("f-memory", "e.g. 512M, 2G"),
    stopOnExit: text("f-stop-exit", "e.g. 0,3"),
    stopOnOutput: text("f-stop-output", "e.g. ^found"),
    stopAfter: text("f-stop-after", "e.g. 10", "numeric"),
    after: text("f-after", "e.g. 12 or 12/3:any"),
    labels: text("f-labels", "e.g. project=ray"),
  };
  const stopOnSuccess = h("input", { id: "f-stop-success", type: "checkbox" });
  const get = (): OptionsForm => ({
    retries: inputs.retries.value,
    retryOn: inputs.retryOn.value,
    timeout: inputs.timeout.value,
    maxRunning: inputs.maxRunning.value,
    cpus: inputs.cpus.value,
    memory: inputs.memory.value,
    stopOnSuccess: stopOnSuccess.checked,
    stopOnExit: inputs.stopOnExit.value,
    stopOnOutput: inputs.stopOnOutput.value,
    stopAfter: inputs.stopAfter.value,
    after: inputs.after.value,
    labels: inputs.labels.value,
  });
  const group = (title: string, ...children: HTMLElement[]) => h("fieldset", { class: "opt-group" }, h("legend", null, title), ...children);
  const el = h(
    "details",
    { class: "disclose-opts", id: "disclose-opts" },
    h("summary", null, "Options: retries, timeout, resources, stop rule, after, labels"),
    h(
      "div",
      { class: "opt-grid" },
      group(
        "Each task",
        field("f-timeout", "Timeout", inputs.timeout, "Kill a copy after this run time; the task finishes as timed out."),
        h("div", { class: "form-row" }, field("f-cpus", "CPUs", inputs.cpus), field("f-memory", "Memory", inputs.memory)),
      ),
      group(
        "Retries",
        h("div", { class: "form-row" }, field("f-retries", "Retries", inputs.retries), field("f-retry-on", "Retry on", inputs.retryOn)),
        h("p", { class: "help" }, "Retry a failed task in place up to this many times (0 to 100), on these exit codes or nonzero, timeout, lost."),
      ),
      group(
        "The set",
        field("f-max-running", "Max running copies", inputs.maxRunning),
        field("f-after", "Wait for (after)", inputs.after, "Sets or SET/INDEX tasks to wait for; :any also goes on after a failure."),
        field("f-labels", "Labels", inputs.labels, "KEY=VALUE, separated by spaces; find the set by them in the list."),
      ),
      group(
        "Stop rule: cancel the rest when",
        h("div", { class: "checks" }, h("label", null, stopOnSuccess, " a task succeeds (exits 0)")),
        field("f-stop-exit", "a task exits with", inputs.stopOnExit),
        field("f-stop-output", "its output matches (regex)", inputs.stopOnOutput),
        field("f-stop-after", "this many tasks succeeded", inputs.stopAfter),
      ),
    ),
  );
  const set = (o: OptionsForm) => {
    for (const [k, input] of Object.entries(inputs)) input.value = o[k as keyof typeof inputs];
    stopOnSuccess.checked = o.stopOnSuccess;
    el.open = Object.entries(o).some(([, v]) => v !== "" && v !== false);
  };
  return { el, inputs, get, set };
}
