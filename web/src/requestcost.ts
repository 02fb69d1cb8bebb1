// What "Request all" would bill, as the estimates imply: asked before the
// page requests every unrequested task of a set.

import { fmtCount, fmtNumber, plural } from "./format";
import { TaskState } from "./gen/batch/v1/types_pb";
import type { Task } from "./gen/batch/v1/types_pb";

/** RequestBill is what requesting every unrequested task would bill. */
export interface RequestBill {
  /** tasks is how many tasks would be requested (disclosed and executed ones). */
  tasks: number;
  /** slotSeconds is the billed slot-seconds the estimates and the service times already known imply. */
  slotSeconds: number;
  /** unknown counts the disclosed tasks without an estimate: the bill is at least slotSeconds. */
  unknown: number;
}

/** requestBill sums what requesting tasks would bill: an executed task its service time, a disclosed one its estimate. */
export function requestBill(tasks: Iterable<Task>): RequestBill {
  const b: RequestBill = { tasks: 0, slotSeconds: 0, unknown: 0 };
  for (const t of tasks) {
    if (t.state === TaskState.EXECUTED) {
      b.tasks++;
      b.slotSeconds += t.serviceSeconds;
    } else if (t.state === TaskState.DISCLOSED) {
      b.tasks++;
      const est = t.spec?.estimateSeconds ?? 0;
      if (est > 0) b.slotSeconds += est;
      else b.unknown++;
    }
  }
  return b;
}

/** requestCostText says a RequestBill in words, a bound as a bound. */
export function requestCostText(b: RequestBill): string {
  const secs = `${fmtCount(Math.round(b.slotSeconds))}\u00a0slot-seconds`;
  if (b.unknown === b.tasks) return `None of the ${plural(b.tasks, "task")} has an estimate: the bill cannot be told in advance.`;
  if (b.unknown > 0) return `The estimates imply at least ${secs} billed; ${plural(b.unknown, "task")} without an estimate would add to it.`;
  return `The estimates imply about ${secs} billed${b.slotSeconds > 0 && b.slotSeconds < 1 ? ` (${fmtNumber(b.slotSeconds)})` : ""}.`;
}
