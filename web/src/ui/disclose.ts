// The disclose form: a new task set from a name and commands (one per line,
// or one command over an array range), kept as typed across views with its
// idempotency key, so a refused disclose can be fixed and resubmitted once.

import { formKey, parseDiscloseForm, Shells } from "../form";
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
export function discloseForm(ctx: Ctx): { el: HTMLElement; listed(n: number): void } {
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
  const inputs = { name, commands, estimate, array, shell, keep: keepFiles } as const;
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
      Object.assign(draft, { name: "", commands: "", estimate: "", requestNow: false, noSpeculation: false, mode: "lines", array: "", shell: "sh", keep: "", key: "", formKey: "" });
      drawMode();
      location.hash = `#/sets/${id}`;
    } catch (err) {
      ctx.fail(err, "Disclosing the task set");
    } finally {
      setDisabled(submit, false);
      submit.textContent = "Disclose";
    }
  });
  const typed = () => draft.name !== "" || draft.commands !== "" || draft.estimate !== "" || draft.array !== "" || draft.keep !== "";
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
