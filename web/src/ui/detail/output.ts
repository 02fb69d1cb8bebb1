// The panel below the table on one task: its output (the first page of
// stdout and stderr shown, either downloaded whole), its earlier attempts
// and every copy, and the output a request opens once the task finishes.

import { copyStateName, fmtBytes, fmtDuration, fmtPercent, outputFileName, taskStateName } from "../../format";
import type { GetOutputResponse } from "../../gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "../../gen/batch/v1/types_pb";
import { h, isDisabled, replace, setDisabled, timeAt } from "../dom";
import type { Rows, SetCtx } from "./context";
import { keptSection } from "./kept";

/** outputPage is how many bytes of a stream one GetOutput call reads while downloading it. */
const outputPage = 4 << 20;

/** OutputPanel is the panel on one task below the table. */
export interface OutputPanel {
  /** el is the panel. */
  readonly el: HTMLElement;
  /** shown is the task whose output or attempts are open, if any. */
  shown(): number | undefined;
  /** openWhenFinished opens task i's output once it finishes (it was just requested). */
  openWhenFinished(i: number): void;
  /** forget stops waiting for task i to finish (its request failed). */
  forget(i: number): void;
  /** afterUpdate opens the output of the awaited tasks among indexes that finished. */
  afterUpdate(indexes: Iterable<number>): void;
  /** showOutput opens the panel on one task's output (and its attempts, if it was retried); focus moves the focus to it. */
  showOutput(index: number, focus?: boolean): Promise<void>;
  /** awaitOutput opens the panel on a task just requested, saying its output comes here, and puts it in view. */
  awaitOutput(index: number): void;
  /** showDetail opens the panel on one task's attempts and copies, without its output. */
  showDetail(index: number): Promise<void>;
}

/** mountOutput makes the output panel of one set; table is the table's drawn rows, whose Output buttons follow the panel. */
export function mountOutput(sc: SetCtx, table: Rows): OutputPanel {
  const { ctx, setId, view } = sc;
  const output = h("section", { class: "output", id: "output", hidden: true, "aria-labelledby": "output-h" });
  const awaiting = new Set<number>(); // requested here: their output opens when they finish
  let shownOutput: number | undefined;

  /** afterUpdate opens the output of the awaited tasks among indexes that finished, and stops waiting for those canceled. */
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

  /** showOutput opens the panel on one task's output (and its attempts, if it was retried). */
  async function showOutput(index: number, focus = false): Promise<void> {
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) table.touch(i);
    table.drawWindow();
    output.hidden = false;
    replace(output, h("h3", { id: "output-h", tabindex: -1 }, `Output of task ${index}`), h("p", { class: "muted" }, "Loading…"));
    if (focus) inView(true);
    try {
      const r = await ctx.clients.tasks.getOutput({ setId, index }, { signal: ctx.signal });
      if (shownOutput !== index) return;
      drawOutput(index, r);
      if (focus) inView(true);
      const t = view.tasks.get(index);
      if (t && t.attempt > 1) await showAttempts(index);
    } catch (err) {
      replace(output, h("h3", { id: "output-h" }, `Output of task ${index}`), h("p", null, "Not available."));
      ctx.fail(err, `Reading the output of task ${index}`);
    }
  }

  /** inView scrolls the panel into view and, when focus, moves the focus to its heading. */
  function inView(focus: boolean): void {
    output.scrollIntoView({ block: "nearest" });
    if (focus) output.querySelector<HTMLElement>("#output-h")?.focus({ preventScroll: true });
  }

  /** awaitOutput opens the panel on a task just requested, saying its output comes here, and puts it in view. */
  function awaitOutput(index: number): void {
    const t = view.tasks.get(index);
    if (t?.state === TaskState.FINISHED) return;
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) table.touch(i);
    output.hidden = false;
    replace(
      output,
      h("h3", { id: "output-h", tabindex: -1 }, `Output of task ${index}`),
      h("p", { class: "muted", id: "out-waiting" }, "Requested: the output shows here when the task finishes. ", h("a", { href: `#/sets/${setId}/tasks/${index}` }, "Follow it live"), "."),
    );
    inView(false);
  }

  /** drawOutput draws one task's output into the panel. */
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
        h("h3", { id: "output-h", tabindex: -1 }, `Output of task ${index}`),
        h(
          "button",
          {
            type: "button",
            class: "link",
            onclick: () => {
              output.hidden = true;
              const was = shownOutput;
              shownOutput = undefined;
              table.redrawRow(was)?.querySelector<HTMLElement>("[data-action=output]")?.focus();
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
      keptSection(sc, index, r),
    );
  }

  /** showDetail opens the panel on one task's attempts and copies, without its output. */
  async function showDetail(index: number): Promise<void> {
    const prev = shownOutput;
    shownOutput = index;
    for (const i of [prev, index]) table.touch(i);
    table.drawWindow();
    output.hidden = false;
    const close = h("button", { type: "button", class: "link" }, "Close");
    close.addEventListener("click", () => {
      output.hidden = true;
      const was = shownOutput;
      shownOutput = undefined;
      table.redrawRow(was)?.querySelector<HTMLElement>("[data-action=attempts]")?.focus();
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
        h("td", null, timeAt(a.retriedAt)),
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
        h("td", null, timeAt(c.startedAt)),
        h("td", null, timeAt(c.endedAt)),
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

  /** download saves one stream of a task whole, read a page at a time after the part already shown. */
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

  return {
    el: output,
    shown: () => shownOutput,
    openWhenFinished: (i) => void awaiting.add(i),
    forget: (i) => void awaiting.delete(i),
    afterUpdate,
    showOutput,
    showDetail,
    awaitOutput,
  };
}
