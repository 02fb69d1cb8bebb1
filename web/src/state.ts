// The state of one watched task set, reduced from WatchTaskSet messages.

import type { WatchTaskSetResponse } from "./gen/batch/v1/taskset_pb";
import { TaskState } from "./gen/batch/v1/types_pb";
import type { Task, TaskSet } from "./gen/batch/v1/types_pb";
import { tsSeconds } from "./format";

/** SetView is what the page knows of one task set: its summary and tasks by index. */
export interface SetView {
  set: TaskSet | undefined;
  tasks: Map<number, Task>;
  /** snapshots counts the snapshots received (one per (re)connection). */
  snapshots: number;
}

/** emptyView is the SetView before the first message. */
export function emptyView(): SetView {
  return { set: undefined, tasks: new Map(), snapshots: 0 };
}

/** Change says which rows to redraw after a message: every row, or these indexes. */
export type Change = { all: true } | { all: false; indexes: number[] };

/**
 * applyWatch folds one WatchTaskSetResponse into a view and returns the new
 * view (the old one is not modified) with the rows that changed. A snapshot
 * replaces every task; a later message replaces the tasks it carries. A
 * message for another set, or a delta before any snapshot, is ignored.
 */
export function applyWatch(prev: SetView, msg: WatchTaskSetResponse): { view: SetView; change: Change } {
  const set = msg.taskSet ?? prev.set;
  if (prev.set && msg.taskSet && msg.taskSet.id !== prev.set.id) {
    return { view: prev, change: { all: false, indexes: [] } };
  }
  if (msg.snapshot) {
    const tasks = new Map<number, Task>();
    for (const t of msg.tasks) tasks.set(t.index, t);
    return { view: { set, tasks, snapshots: prev.snapshots + 1 }, change: { all: true } };
  }
  if (prev.snapshots === 0) return { view: prev, change: { all: false, indexes: [] } };
  const tasks = new Map(prev.tasks);
  const indexes: number[] = [];
  let added = false;
  for (const t of msg.tasks) {
    if (!tasks.has(t.index)) added = true; // appended: order must be redrawn
    tasks.set(t.index, t);
    indexes.push(t.index);
  }
  const change: Change = added ? { all: true } : { all: false, indexes };
  return { view: { set, tasks, snapshots: prev.snapshots }, change };
}

/** sortedTasks lists a view's tasks in set order. */
export function sortedTasks(v: SetView): Task[] {
  return [...v.tasks.values()].sort((a, b) => a.index - b.index);
}

/** isRequestable reports whether a task can be requested (disclosed or executed). */
export function isRequestable(t: Task): boolean {
  return t.state === TaskState.DISCLOSED || t.state === TaskState.EXECUTED;
}

/** isCancelable reports whether cancel would change the task (not finished, not canceled). */
export function isCancelable(t: Task): boolean {
  return isRequestable(t) || t.state === TaskState.REQUESTED;
}

/** restCount counts the tasks "cancel the rest" would cancel: the unrequested ones. */
export function restCount(v: SetView): number {
  let n = 0;
  for (const t of v.tasks.values()) if (isRequestable(t)) n++;
  return n;
}

/**
 * visibleResponse is the visible response time the page shows at `now`
 * (seconds): the final value for a finished task, the time waited so far for
 * a requested one, undefined otherwise.
 */
export function visibleResponse(t: Task, now: number): { seconds: number; final: boolean } | undefined {
  if (t.state === TaskState.FINISHED) return { seconds: t.visibleResponseSeconds, final: true };
  if (t.state === TaskState.REQUESTED) {
    const r = tsSeconds(t.requestedAt);
    if (r === undefined) return undefined;
    return { seconds: Math.max(0, now - r), final: false };
  }
  return undefined;
}
