// The disclose form's options beyond the commands, read as batchctl
// disclose reads its flags: --retries and --retry-on, --timeout,
// --max-running, --cpus, --memory, the --stop-* rule, --after and --label.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DiscloseRequestSchema } from "./gen/batch/v1/taskset_pb";
import type { DependencySchema } from "./gen/batch/v1/types_pb";
import { parseLabels } from "./setfilter";

/** OptionsForm is the raw text of the options' fields; "" (or false) leaves an option unset. */
export interface OptionsForm {
  retries: string;
  retryOn: string;
  timeout: string;
  maxRunning: string;
  cpus: string;
  memory: string;
  stopOnSuccess: boolean;
  stopOnExit: string;
  stopOnOutput: string;
  stopAfter: string;
  after: string;
  labels: string;
}

/** emptyOptions is a form with no option set. */
export function emptyOptions(): OptionsForm {
  return { retries: "", retryOn: "", timeout: "", maxRunning: "", cpus: "", memory: "", stopOnSuccess: false, stopOnExit: "", stopOnOutput: "", stopAfter: "", after: "", labels: "" };
}

type Request = MessageInitShape<typeof DiscloseRequestSchema>;

/** SetOptions are the request's set-wide fields the options fill. */
export type SetOptions = Pick<Request, "maxRunning" | "retry" | "stop" | "after" | "labels">;
/** TaskOptions are each task's fields the options fill. */
export interface TaskOptions {
  timeoutSeconds: number;
  cpus: number;
  memoryMb: bigint;
}

const unitSeconds: Record<string, number> = { "": 1, s: 1, sec: 1, m: 60, min: 60, h: 3600, d: 86400 };

/** parseDuration reads "90", "90s", "10m", "1.5h" as seconds (0 when empty). */
export function parseDuration(text: string): number | string {
  const t = text.trim().toLowerCase();
  if (t === "") return 0;
  const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/.exec(t);
  if (!m || !(m[2] in unitSeconds)) return "Write it as seconds, or with a unit: 90, 90s, 10m, 1h.";
  return Number(m[1]) * unitSeconds[m[2]];
}

/** parseMiB reads a memory size as batchctl --memory does: MiB, or with K, M, G or T (512M, 2G, 1.5GiB). */
export function parseMiB(text: string): bigint | string {
  let t = text.trim().toUpperCase();
  if (t === "") return 0n;
  t = t.replace(/([KMGT])I?B$/, "$1");
  const m = /^(\d+(?:\.\d+)?|\.\d+)\s*([KMGT]?)$/.exec(t);
  const unit = { "": 1, K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 }[m?.[2] ?? ""] ?? 1;
  const v = m ? Number(m[1]) * unit : NaN;
  if (!Number.isFinite(v) || v > 2 ** 40) return "Write a memory size: MiB, or with K, M, G or T (512M, 2G).";
  return BigInt(Math.ceil(v));
}

function parseCount(text: string, lo: number, hi: number, what: string): number | string {
  const t = text.trim();
  if (t === "") return 0;
  if (!/^\d+$/.test(t) || Number(t) < lo || Number(t) > hi) return `${what}: a whole number from ${lo} to ${hi}.`;
  return Number(t);
}

function parseCodes(text: string, lo: number, what: string): number[] | string {
  const out: number[] = [];
  for (const w of text.split(",").map((x) => x.trim()).filter((x) => x !== "")) {
    if (!/^\d+$/.test(w) || Number(w) < lo || Number(w) > 255) return `${what}: exit codes ${lo} to 255, separated by commas (got ${JSON.stringify(w)}).`;
    if (!out.includes(Number(w))) out.push(Number(w));
  }
  return out;
}

/** parseAfter reads "12 13/4:any": sets (or SET/INDEX tasks) the new set waits for, :ok (default) or :any. */
export function parseAfter(text: string): MessageInitShape<typeof DependencySchema>[] | string {
  const out: MessageInitShape<typeof DependencySchema>[] = [];
  for (const w of text.split(/[\s,]+/).filter((x) => x !== "")) {
    const m = /^#?([1-9]\d{0,17})(?:\/(\d{1,9}))?(?::(ok|any))?$/.exec(w);
    if (!m) return `Write what it waits for as SET or SET/INDEX, with :ok or :any (e.g. 12 or 12/3:any); got ${JSON.stringify(w)}.`;
    out.push({ setId: BigInt(m[1]), index: m[2] === undefined ? undefined : Number(m[2]), anyOutcome: m[3] === "any" });
  }
  return out;
}

/**
 * parseOptions reads the options into the request's set fields and each
 * task's fields, or errors keyed by field.
 */
export function parseOptions(o: OptionsForm): { set: SetOptions; task: TaskOptions } | { errors: Partial<Record<keyof OptionsForm, string>> } {
  const errors: Partial<Record<keyof OptionsForm, string>> = {};
  const retries = parseCount(o.retries, 0, 100, "Retries");
  if (typeof retries === "string") errors.retries = retries;
  const on = o.retryOn.trim() === "" ? ["nonzero", "timeout"] : o.retryOn.split(",").map((x) => x.trim()).filter((x) => x !== "");
  const retry = { retries: typeof retries === "number" ? retries : 0, exitCodes: [] as number[], nonzero: false, timeout: false, lost: false };
  for (const w of on) {
    if (w === "nonzero") retry.nonzero = true;
    else if (w === "timeout") retry.timeout = true;
    else if (w === "lost") retry.lost = true;
    else if (/^\d+$/.test(w) && Number(w) >= 1 && Number(w) <= 255) retry.exitCodes.push(Number(w));
    else errors.retryOn = `Retry on: exit codes 1 to 255, nonzero, timeout or lost, separated by commas (got ${JSON.stringify(w)}).`;
  }
  const timeout = parseDuration(o.timeout);
  if (typeof timeout === "string") errors.timeout = timeout;
  const maxRunning = parseCount(o.maxRunning, 0, 1_000_000, "Max running");
  if (typeof maxRunning === "string") errors.maxRunning = maxRunning;
  const cpus = parseCount(o.cpus, 1, 1024, "CPUs");
  if (typeof cpus === "string") errors.cpus = cpus;
  const memory = parseMiB(o.memory);
  if (typeof memory === "string") errors.memory = memory;
  const onExit = parseCodes(o.stopOnExit, 0, "Stop on exit");
  if (typeof onExit === "string") errors.stopOnExit = onExit;
  const stopAfter = parseCount(o.stopAfter, 0, 1_000_000, "Stop after");
  if (typeof stopAfter === "string") errors.stopAfter = stopAfter;
  if (o.stopOnOutput !== "") {
    try {
      new RegExp(o.stopOnOutput);
    } catch {
      errors.stopOnOutput = "Stop on output: not a regular expression.";
    }
  }
  const after = parseAfter(o.after);
  if (typeof after === "string") errors.after = after;
  const labels = parseLabels(o.labels);
  if (typeof labels === "string") errors.labels = labels;
  if (Object.keys(errors).length > 0) return { errors };
  const set: SetOptions = { maxRunning: maxRunning as number, after: after as SetOptions["after"], labels: labels as SetOptions["labels"] };
  if (retry.retries > 0) set.retry = retry;
  const stop = { onSuccess: o.stopOnSuccess, onExit: onExit as number[], onOutput: o.stopOnOutput, after: stopAfter as number };
  if (stop.onSuccess || stop.onExit.length > 0 || stop.onOutput !== "" || stop.after > 0) set.stop = stop;
  return { set, task: { timeoutSeconds: timeout as number, cpus: cpus as number, memoryMb: memory as bigint } };
}
