// Parsing of the disclose form: commands one per line, a name, an estimate.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { parseOptions } from "./formopts";
import type { OptionsForm } from "./formopts";
import type { DiscloseRequestSchema } from "./gen/batch/v1/taskset_pb";

/** MaxTasksPerForm bounds how many commands one form submission discloses. */
export const MaxTasksPerForm = 10000;

/** DiscloseForm is the raw text of the disclose form's fields. */
export interface DiscloseForm {
  name: string;
  commands: string;
  estimate: string;
  requestNow: boolean;
  noSpeculation: boolean;
  /** array is the range LOW-HIGH[:STEP] in array mode; "" means one task per line. */
  array?: string;
  /** shell runs each line (default sh). */
  shell?: string;
  /** keep is the files each task keeps with its result: globs separated by spaces (disclose --keep). */
  keep?: string;
  /** opts are the set's and each task's options (retries, timeout, resources, stop rule, after, labels). */
  opts?: OptionsForm;
}

/** Shells offered by the form; the first is the default. */
export const Shells = ["sh", "bash"] as const;

/** MaxArrayTasks is the server's per-set limit, which an array may not pass. */
export const MaxArrayTasks = 1_000_000;

/**
 * parseArrayRange reads LOW-HIGH[:STEP] (or one value N) as the array's
 * first and last values and step; anything else is an error message.
 */
export function parseArrayRange(text: string): { first: bigint; last: bigint; step: bigint; count: number } | string {
  const t = text.trim();
  if (t === "") return "Write the range as LOW-HIGH or LOW-HIGH:STEP, e.g. 0-299 or 0-299:2.";
  const m = /^(\d+)(?:-(\d+))?(?::(-?\d+))?$/.exec(t);
  if (!m) return "Write the range as LOW-HIGH or LOW-HIGH:STEP, e.g. 0-299 or 0-299:2.";
  const first = BigInt(m[1]);
  const last = m[2] === undefined ? first : BigInt(m[2]);
  const step = m[3] === undefined ? 1n : BigInt(m[3]);
  if (step <= 0n) return "The step must be 1 or more.";
  if (last < first) return `The range is reversed: ${first} is above ${last}.`;
  const count = (last - first) / step + 1n;
  if (count > BigInt(MaxArrayTasks)) return `That is ${count} tasks; a set holds at most ${MaxArrayTasks}.`;
  return { first, last, step, count: Number(count) };
}

/** FormResult is either the request to send or the errors to show, keyed by field. */
export type FormResult =
  | { ok: true; request: MessageInitShape<typeof DiscloseRequestSchema> }
  | { ok: false; errors: Partial<Record<keyof DiscloseForm | keyof OptionsForm, string>> };

const unitSeconds: Record<string, number> = { "": 1, s: 1, sec: 1, m: 60, min: 60, h: 3600 };

/**
 * parseEstimate reads "90", "90s", "1.5m", "2 min" or "1h" as seconds; an
 * empty field is 0 (unknown). Anything else is an error message.
 */
export function parseEstimate(text: string): number | string {
  const t = text.trim().toLowerCase();
  if (t === "") return 0;
  const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/.exec(t);
  if (!m || !(m[2] in unitSeconds)) {
    return "Write the estimate as seconds, or with a unit: 90, 90s, 1.5m, 1h.";
  }
  const v = Number(m[1]) * unitSeconds[m[2]];
  if (!Number.isFinite(v) || v > 365 * 24 * 3600) return "The estimate is too large (at most a year).";
  return v;
}

/**
 * parseCommands splits the commands field into one shell line per task, by
 * the rule batchctl's --file follows (cmd/batchctl/lines.go; both tests
 * read test/commands.vectors.json): the text splits at "\n" (a "\r" before
 * it is dropped); a line ending in an odd number of backslashes goes on
 * into the next, keeping the backslash and newline for the shell to read as
 * a continuation (a backslash at the very end of the text is dropped); each
 * line is trimmed of spaces, tabs and newlines; empty lines and lines starting with #
 * are skipped.
 */
export function parseCommands(text: string): string[] {
  const out: string[] = [];
  const emit = (line: string) => {
    const t = line.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
    if (t !== "" && !t.startsWith("#")) out.push(t);
  };
  const lines = text.split("\n").map((l) => l.replace(/\r$/, ""));
  if (text.endsWith("\n")) lines.pop();
  let pending = "";
  for (const raw of lines) {
    if ((raw.length - raw.replace(/\\+$/, "").length) % 2 === 1) {
      pending += raw + "\n";
      continue;
    }
    emit(pending + raw);
    pending = "";
  }
  if (pending !== "") emit(pending.slice(0, -2));
  return out;
}

/** MaxKeepPatterns and MaxKeepPatternBytes are the server's limits on a task's keep patterns. */
export const MaxKeepPatterns = 32;
export const MaxKeepPatternBytes = 256;

/**
 * parseKeep reads the keep field: globs relative to the task's scratch
 * directory, separated by spaces, under the server's rules (no absolute
 * path, no "." or ".." or empty component, no "**"); anything else is an
 * error message.
 */
export function parseKeep(text: string): string[] | string {
  const patterns = text.split(/\s+/).filter((p) => p !== "");
  if (patterns.length > MaxKeepPatterns) return `At most ${MaxKeepPatterns} patterns: keep a directory's files with one glob (out/*).`;
  for (const p of patterns) {
    if (new TextEncoder().encode(p).length > MaxKeepPatternBytes) return `A pattern is at most ${MaxKeepPatternBytes} bytes long.`;
    if (p.startsWith("/")) return `${p} is absolute: patterns are relative to the task's scratch directory.`;
    for (const c of p.split("/")) {
      if (c === "" || c === "." || c === "..") return `${p}: no empty, "." or ".." parts; patterns stay in the task's scratch directory.`;
      if (c.includes("**")) return `${p}: ** is not supported; give one pattern per directory level (out/*/*.csv).`;
    }
  }
  return patterns;
}

/**
 * parseDiscloseForm validates the form and builds the DiscloseRequest: each
 * command runs as `sh -c LINE` so pipes, redirections and $BATCH_COPY_ID work.
 */
export function parseDiscloseForm(f: DiscloseForm, idempotencyKey: string): FormResult {
  const errors: Partial<Record<keyof DiscloseForm | keyof OptionsForm, string>> = {};
  const name = f.name.trim();
  if (name.length > 200) errors.name = "The name is too long (at most 200 characters).";
  const shell = f.shell || "sh";
  if (!(Shells as readonly string[]).includes(shell)) errors.shell = `Pick a shell: ${Shells.join(" or ")}.`;
  const commands = parseCommands(f.commands);
  const isArray = f.array !== undefined;
  const range = isArray ? parseArrayRange(f.array!) : undefined;
  if (typeof range === "string") errors.array = range;
  if (commands.length === 0) errors.commands = isArray ? "Write the command each task of the array runs." : "Write at least one command, one per line.";
  else if (isArray && commands.length > 1) {
    errors.commands = "An array runs one command (a line; end a line with \\ to go on): each task sees its value as $BATCH_ARRAY_VALUE.";
  } else if (commands.length > MaxTasksPerForm) {
    errors.commands = `At most ${MaxTasksPerForm} commands at once; append the rest later.`;
  }
  const est = parseEstimate(f.estimate);
  if (typeof est === "string") errors.estimate = est;
  const keep = parseKeep(f.keep ?? "");
  if (typeof keep === "string") errors.keep = keep;
  const opts = f.opts ? parseOptions(f.opts) : { set: {}, task: {} };
  if ("errors" in opts) Object.assign(errors, opts.errors);
  if (Object.keys(errors).length > 0 || "errors" in opts) return { ok: false, errors };
  const spec = (line: string) => ({ argv: [shell, "-c", line], estimateSeconds: est as number, noSpeculation: f.noSpeculation, keep: keep as string[], ...opts.task });
  if (range && typeof range !== "string") {
    return {
      ok: true,
      request: {
        setId: 0n,
        name,
        idempotencyKey,
        request: f.requestNow,
        ...opts.set,
        array: { first: range.first, last: range.last, step: range.step, spec: spec(commands[0]) },
      },
    };
  }
  return {
    ok: true,
    request: {
      setId: 0n,
      name,
      idempotencyKey,
      request: f.requestNow,
      ...opts.set,
      tasks: commands.map(spec),
    },
  };
}

/** formKey is a stable digest of the form's content, so a resubmission of the same form reuses its idempotency key. */
export function formKey(f: DiscloseForm): string {
  return JSON.stringify([f.name.trim(), parseCommands(f.commands), f.estimate.trim(), f.requestNow, f.noSpeculation, f.array?.trim() ?? null, f.shell || "sh", parseKeep(f.keep ?? ""), f.opts ?? null]);
}
