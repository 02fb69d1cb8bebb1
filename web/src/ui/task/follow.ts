// A task's output in its own view, as it is written: the FollowOutput
// stream, resumed from the bytes already shown when it drops, drawn a line
// at a time, each line with an anchor that can be shared
// (#/sets/N/tasks/I/L42).

import { Backoff } from "../../backoff";
import { fmtCount, taskStateName } from "../../format";
import { TaskState } from "../../gen/batch/v1/types_pb";
import { LineBuffer } from "../../lines";
import { routeHash } from "../../route";
import { Code, ConnectError } from "@connectrpc/connect";
import { isAbort } from "../../errors";
import { sleep } from "../../watch";
import { h, replace } from "../dom";
import type { SetCtx } from "../detail/context";

/** drawMs is how often, at most, new output is drawn. */
const drawMs = 250;

/** setText changes an element's text only when it differs (a change is a layout). */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** maxLines is how many lines of a stream the view keeps drawn; earlier ones are left to the download. */
const maxLines = 5000;

/** Follow is one task's live output in its view. */
export interface Follow {
  /** el holds both streams and the stream's status. */
  readonly el: HTMLElement;
  /** mark marks line n of stdout (a shared anchor) and scrolls to it once it is drawn. */
  mark(line: number | undefined): void;
  /** stop ends the stream. */
  stop(): void;
  /** waiting says the server refused to follow the task as it stands (not requested yet): follow it again once it is. */
  waiting(): boolean;
}

/** StreamBox is one stream's lines in the page. */
interface StreamBox {
  pre: HTMLElement;
  buf: LineBuffer;
  tail: HTMLElement;
  count: HTMLElement;
}

/** followOutput opens the live output of task index and draws it into a new element. */
export function followOutput(sc: SetCtx, index: number, line: number | undefined): Follow {
  const { ctx, setId } = sc;
  const ac = new AbortController();
  const abort = () => ac.abort();
  ctx.signal.addEventListener("abort", abort);
  const status = h("p", { class: "muted tv-status", id: "tv-follow", role: "status" }, "Connecting to the output…");
  const marker = h("p", { class: "muted", id: "tv-marker", hidden: true });
  const boxes = new Map<"stdout" | "stderr", StreamBox>();
  const sections = (["stdout", "stderr"] as const).map((name) => {
    const tail = h("span", { class: "line-tail" });
    const pre = h("pre", { class: "lines", id: `tv-${name}`, tabindex: 0, "aria-label": `${name} of task ${index}` }, tail);
    const count = h("span", { class: "muted", "data-lines": name });
    boxes.set(name, { pre, buf: new LineBuffer(), tail, count });
    return h("section", { class: "stream", "aria-label": name }, h("div", { class: "stream-head" }, h("h4", null, name), count), pre);
  });
  const el = h("div", { class: "tv-output" }, status, marker, sections);
  let want = line;
  let waiting = false; // the server said the task cannot be followed yet
  let scrolled = false;

  function lineHref(n: number): string {
    return routeHash({ view: "sets", setId, task: index, line: n });
  }

  /** draw appends the lines bytes complete to a stream's box. */
  function draw(name: "stdout" | "stderr", bytes: Uint8Array): void {
    const b = boxes.get(name)!;
    if (bytes.length === 0) return;
    const first = b.buf.count + 1;
    const lines = b.buf.push(bytes);
    if (lines.length > 0) {
      const frag = document.createDocumentFragment();
      lines.forEach((text, k) => {
        const n = first + k;
        const attrs = name === "stdout" ? { class: "line", id: `tv-L${n}`, "data-line": n } : { class: "line", "data-line": n };
        frag.append(
          h(
            "span",
            attrs,
            name === "stdout" ? h("a", { class: "ln", href: lineHref(n), "aria-label": `line ${n}`, tabindex: -1 }, String(n)) : h("span", { class: "ln" }, String(n)),
            text,
            "\n",
          ),
        );
      });
      b.pre.insertBefore(frag, b.tail);
      // Keep the page small: a long output keeps its last maxLines lines drawn.
      let extra = b.pre.childElementCount - 1 - maxLines;
      while (extra-- > 0) b.pre.firstElementChild?.remove();
    }
    const pending = b.buf.pending();
    if (b.tail.textContent !== pending) b.tail.textContent = pending;
    const n = b.buf.count + (pending ? 1 : 0);
    setText(b.count, `${fmtCount(n)} line${n === 1 ? "" : "s"}`);
    if (name === "stdout") showMark();
  }

  // Bytes are drawn at most every drawMs: a task that writes a line every
  // few milliseconds costs one DOM change per period, not one per message.
  const queued = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
  let drawTimer: ReturnType<typeof setTimeout> | undefined;
  function queue(name: "stdout" | "stderr", bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    queued[name].push(bytes);
    if (drawTimer === undefined) drawTimer = setTimeout(flush, drawMs);
  }
  function flush(): void {
    clearTimeout(drawTimer);
    drawTimer = undefined;
    for (const name of ["stdout", "stderr"] as const) {
      const parts = queued[name];
      if (parts.length === 0) continue;
      queued[name] = [];
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      draw(name, all);
    }
  }
  ac.signal.addEventListener("abort", () => clearTimeout(drawTimer));

  /** showMark marks the wanted line once it is drawn (again, after a switch of copy) and scrolls its box to it once. */
  function showMark(): void {
    if (want === undefined) return;
    const el = document.getElementById(`tv-L${want}`);
    if (!el || el.classList.contains("marked")) return;
    for (const old of el.parentElement!.querySelectorAll(".line.marked")) old.classList.remove("marked");
    el.classList.add("marked");
    if (scrolled) return;
    scrolled = true;
    const pre = el.parentElement!;
    pre.scrollTop = el.offsetTop - pre.offsetTop - 24;
  }

  function reset(): void {
    scrolled = false;
    for (const b of boxes.values()) {
      b.buf.reset();
      replace(b.pre, b.tail);
      b.tail.textContent = "";
      b.count.textContent = "";
    }
  }

  async function run(): Promise<void> {
    const backoff = new Backoff();
    let copyId = 0n;
    const off = { stdout: 0n, stderr: 0n };
    for (;;) {
      try {
        const stream = ctx.clients.tasks.followOutput(
          { setId, index, copyId, stdoutOffset: off.stdout, stderrOffset: off.stderr },
          { signal: ac.signal },
        );
        status.textContent = "Following the output as it is written.";
        for await (const m of stream) {
          backoff.reset();
          if (m.switched) {
            flush();
            reset();
            off.stdout = off.stderr = 0n;
            marker.hidden = false;
            marker.textContent = m.marker;
          }
          copyId = m.copyId;
          queue("stdout", m.stdout);
          queue("stderr", m.stderr);
          off.stdout = m.stdoutOffset + BigInt(m.stdout.length);
          off.stderr = m.stderrOffset + BigInt(m.stderr.length);
          if (m.copyId !== 0n) setText(status, `Following copy #${m.copyId} as it writes.`);
          if (m.ended) {
            flush();
            const cut = [m.stdoutTruncated ? "stdout" : "", m.stderrTruncated ? "stderr" : ""].filter((x) => x);
            status.textContent =
              `The task is ${taskStateName(m.state)}` +
              (m.state === TaskState.FINISHED ? `, exit ${m.exitCode}${m.timedOut ? " (timed out)" : ""}` : "") +
              (cut.length ? `; ${cut.join(" and ")} cut at the server's output cap` : "") +
              ".";
            for (const b of boxes.values()) {
              // The last line had no newline: it is complete now.
              if (b.buf.pending()) b.tail.classList.add("ended");
            }
            return;
          }
        }
      } catch (err) {
        if (ac.signal.aborted || isAbort(err)) return;
        const ce = ConnectError.from(err);
        const code = ce.code;
        if (code === Code.FailedPrecondition) {
          // Not requested yet: the view follows again once the task is requested.
          status.textContent = `Not followed yet: ${ce.rawMessage}.`;
          waiting = true;
          return;
        }
        if ([Code.NotFound, Code.PermissionDenied, Code.Unauthenticated, Code.InvalidArgument, Code.Unimplemented].includes(code)) {
          status.textContent = `The output cannot be followed: ${ce.rawMessage}.`;
          return;
        }
        const wait = backoff.next();
        status.textContent = `The output stream dropped (${err instanceof Error ? err.message : String(err)}); following again in ${(wait / 1000).toFixed(1)} s.`;
        await sleep(wait, ac.signal);
        if (ac.signal.aborted) return;
        continue;
      }
      return;
    }
  }
  void run();

  return {
    el,
    mark(n) {
      want = n;
      scrolled = false;
      for (const old of el.querySelectorAll(".line.marked")) old.classList.remove("marked");
      showMark();
    },
    waiting: () => waiting,
    stop() {
      ac.abort();
      ctx.signal.removeEventListener("abort", abort);
    },
  };
}
