// Formatting of durations, sizes, states and commands for display. Pure
// functions only, so that the unit tests pin every string the page shows.

import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { CopyState, TaskState } from "./gen/batch/v1/types_pb";
import type { Copy, TaskSpec } from "./gen/batch/v1/types_pb";

/** fmtDuration renders seconds as "3.1 ms", "0.42 s", "12.3 s", "4 m 05 s" or "2 h 03 m". */
export function fmtDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  if (seconds > 0 && seconds < 0.01) return `${fmtNumber(seconds * 1000, 1)} ms`;
  if (seconds < 10) return `${seconds.toFixed(2)} s`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const total = Math.round(seconds);
  if (total < 3600) {
    const m = Math.floor(total / 60);
    const s = total % 60;
    return `${m} m ${String(s).padStart(2, "0")} s`;
  }
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  return `${h} h ${String(m).padStart(2, "0")} m`;
}

/** fmtNumber renders a number with at most `digits` decimals and no trailing zeros; a non-zero amount too small for that keeps two significant digits. */
export function fmtNumber(n: number, digits = 2): string {
  if (!Number.isFinite(n)) return "—";
  // Small amounts keep two significant digits rather than showing as 0.
  if (n !== 0 && Math.abs(n) < Math.pow(10, -digits)) return String(Number(n.toPrecision(2)));
  const s = n.toFixed(digits);
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** fmtQty renders an amount with thousands separators and at most `digits` decimals, its unit joined by a no-break space: "100,294.5\u00a0slot-seconds". */
export function fmtQty(n: number, unit: string, digits = 2): string {
  if (!Number.isFinite(n)) return "—";
  const v = Number(fmtNumber(n, digits));
  const [int, frac] = String(v).split(".");
  const whole = Number(int).toLocaleString("en-US", { maximumFractionDigits: 0 });
  return `${int.startsWith("-") && whole === "0" ? "-" : ""}${whole}${frac ? `.${frac}` : ""}\u00a0${unit}`;
}

/** nbsp joins a formatted value's words with no-break spaces ("4 m 05 s" never wraps apart). */
export function nbsp(s: string): string {
  return s.replace(/ /g, "\u00a0");
}

/** fmtBytes renders a byte count as "512 B", "1.5 KiB", "16 MiB". */
export function fmtBytes(n: number | bigint): string {
  let v = Number(n);
  if (!Number.isFinite(v) || v < 0) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${fmtNumber(v, 1)} ${units[u]}`;
}

/** fmtPercent renders a fraction in [0,1] as a whole percentage, "—" when unknown (<0). */
export function fmtPercent(fraction: number): string {
  if (!Number.isFinite(fraction) || fraction < 0) return "—";
  return `${Math.round(Math.min(1, fraction) * 100)}%`;
}

/** tsSeconds converts an optional Timestamp to seconds since the epoch, or undefined. */
export function tsSeconds(ts: Timestamp | undefined): number | undefined {
  if (!ts) return undefined;
  if (ts.seconds === 0n && ts.nanos === 0) return undefined;
  return timestampMs(ts) / 1000;
}

/** fmtClock renders a Timestamp as a date and time in timeZone (the browser's own when not given), "2026-11-22 03:34:26"; timeAt (ui/dom.ts) adds the UTC time on hover. */
export function fmtClock(ts: Timestamp | undefined, timeZone?: string): string {
  const s = tsSeconds(ts);
  if (s === undefined) return "—";
  return fmtLocal(s, timeZone);
}

/** fmtClockUTC renders a Timestamp as a UTC date and time, "2026-11-22 02:34:26Z". */
export function fmtClockUTC(ts: Timestamp | undefined): string {
  const s = tsSeconds(ts);
  return s === undefined ? "—" : fmtUTC(s);
}

/** fmtUTC renders seconds since the epoch as a UTC date and time, "2026-11-22 02:34:26Z". */
export function fmtUTC(seconds: number): string {
  if (!Number.isFinite(seconds)) return "—";
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** fmtLocal renders seconds since the epoch as a date and time in timeZone (the browser's own when not given): "2026-11-22 03:34:26". */
export function fmtLocal(seconds: number, timeZone?: string): string {
  if (!Number.isFinite(seconds)) return "—";
  const p = Object.fromEntries(
    new Intl.DateTimeFormat("en-GB", { timeZone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" })
      .formatToParts(new Date(seconds * 1000))
      .map((x) => [x.type, x.value]),
  );
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

const taskStateNames: Record<TaskState, string> = {
  [TaskState.UNSPECIFIED]: "unknown",
  [TaskState.DISCLOSED]: "disclosed",
  [TaskState.EXECUTED]: "executed",
  [TaskState.REQUESTED]: "requested",
  [TaskState.FINISHED]: "finished",
  [TaskState.CANCELED]: "canceled",
};

/** taskStateName is the word DESIGN.md uses for a task state. */
export function taskStateName(s: TaskState): string {
  return taskStateNames[s] ?? "unknown";
}

const copyStateNames: Record<CopyState, string> = {
  [CopyState.UNSPECIFIED]: "unknown",
  [CopyState.RUNNING]: "running",
  [CopyState.SUSPENDED]: "suspended",
  [CopyState.WON]: "won",
  [CopyState.KILLED]: "killed",
  [CopyState.LOST]: "lost",
};

/** copyStateName is the word for a copy state. */
export function copyStateName(s: CopyState): string {
  return copyStateNames[s] ?? "unknown";
}

/** copyLabel describes one copy: "#12 w1/0 speculative running 40%". */
export function copyLabel(c: Copy): string {
  const parts = [`#${c.id}`, `${c.worker || "?"}/${c.slot}`];
  if (c.speculative) parts.push("speculative");
  parts.push(copyStateName(c.state));
  if (c.state === CopyState.RUNNING && c.progress >= 0) parts.push(fmtPercent(c.progress));
  return parts.join(" ");
}

const safeWord = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** shellQuote quotes one argument for display the way a POSIX shell reads it. */
export function shellQuote(arg: string): string {
  if (arg !== "" && safeWord.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * commandText shows a task's command: the script of a `sh -c SCRIPT` task
 * as written, anything else as a quoted argv.
 */
export function commandText(spec: TaskSpec | undefined): string {
  if (!spec || spec.argv.length === 0) return "";
  const a = spec.argv;
  if (a.length === 3 && a[0] === "sh" && a[1] === "-c") return a[2];
  return a.map(shellQuote).join(" ");
}

/** outputFileName is the file name a downloaded output stream is saved under. */
export function outputFileName(setId: bigint, index: number, stream: "stdout" | "stderr"): string {
  return `set-${setId}-task-${index}.${stream}.txt`;
}

/** keptFileName is the file name a downloaded kept file is saved under: its path's slashes become "_", so a browser keeps it whole. */
export function keptFileName(setId: bigint, index: number, path: string): string {
  return `set-${setId}-task-${index}-${path.replaceAll("/", "_")}`;
}

/** fmtCount renders a count with thousands separators: "100,000". */
export function fmtCount(n: number | bigint): string {
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: 0 });
}

/** plural is a count and its noun: "1 task", "2 tasks", "1,000 tasks". */
export function plural(n: number | bigint, noun: string): string {
  return `${fmtCount(n)} ${noun}${n === 1 || n === 1n ? "" : "s"}`;
}

/** fmtAtLeast renders a count the scheduler may have cut short: "256", or "≥ 256" when exact is false. */
export function fmtAtLeast(n: number | bigint, exact: boolean): string {
  return exact ? fmtCount(n) : `≥ ${fmtCount(n)}`;
}

/**
 * fmtEta renders seconds from now the scheduler estimates: "~2 m 5 s", "not
 * before ~2 m 5 s" when it is a lower bound, "unknown" when negative, and
 * "unknown: it has run past its estimate" for a running task that did.
 */
export function fmtEta(seconds: number, lowerBound: boolean, pastEstimate = false): string {
  if (pastEstimate) return "unknown: it has run past its estimate";
  if (!(seconds >= 0) || !Number.isFinite(seconds)) return "unknown";
  const est = seconds === 0 ? "now" : `~${fmtDuration(seconds)}`;
  return lowerBound ? `not before ${est}` : est;
}
