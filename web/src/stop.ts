// A set's stop rule, the task that fired it and its held tasks, in words
// for the set's header.

import { fmtClock, plural } from "./format";
import type { TaskSet } from "./gen/batch/v1/types_pb";

/** stopText says what the set's stop rule is, which task fired it, and how many tasks are held ("" when none of these). */
export function stopText(ts: TaskSet): string {
  const parts: string[] = [];
  const r = ts.stop;
  if (r) {
    const rule: string[] = [];
    if (r.onSuccess) rule.push("on success");
    if (r.onExit.length > 0) rule.push(`on exit ${r.onExit.join(",")}`);
    if (r.onOutput !== "") rule.push(`on output /${r.onOutput}/`);
    if (r.after > 0) rule.push(`after ${r.after} successes`);
    if (rule.length > 0) parts.push(`Stop rule: ${rule.join(", ")}`);
  }
  const f = ts.stopped;
  if (f) parts.push(`fired by task ${f.index} (${f.why}) at ${fmtClock(f.at)}, canceled ${plural(f.canceled, "task")}`);
  const held = ts.counts?.held ?? 0n;
  if (held > 0n) parts.push(`${plural(held, "task")} held`);
  return parts.join(" · ");
}
