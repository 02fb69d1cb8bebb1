// The state of one watched task set, reduced from WatchTaskSet messages, and
// the order in which the table shows its tasks (filtered and sorted).
//
// A set can hold 100,000 tasks and a running one changes a few of them ten
// times a second, so the view is updated in place (no copy of the whole set
// per message) and the table's order is kept up to date by insertion where it
// can be.

import type { WatchTaskSetResponse } from "./gen/batch/v1/taskset_pb";
import { CopyState, TaskState } from "./gen/batch/v1/types_pb";
import type { Task, TaskCounts, TaskSet } from "./gen/batch/v1/types_pb";
import { commandText, tsSeconds } from "./format";
import { CommandParts } from "./vary";

/** SetView is what the page knows of one task set: its summary and tasks by index. */
export interface SetView {
  set: TaskSet | undefined;
  tasks: Map<number, Task>;
  /** snapshots counts the snapshots received (one per (re)connection). */
  snapshots: number;
  /** parts knows what differs between the set's commands. */
  parts: CommandParts;
  /** failed counts the finished tasks that failed (exit code not 0, or timed out). */
  failed: number;
}

/** emptyView is the SetView before the first message. */
export function emptyView(): SetView {
  return { set: undefined, tasks: new Map(), snapshots: 0, parts: new CommandParts(), failed: 0 };
}

/** Change says what a message changed: every task (a snapshot, appended tasks), or these indexes. */
export type Change = { all: true } | { all: false; indexes: number[] };

/**
 * applyWatch folds one WatchTaskSetResponse into the view, in place, and
 * says what changed. A snapshot replaces every task; a later message
 * replaces the tasks it carries (a set larger than the server's chunk goes
 * on in such messages, adding tasks). A message for another set, or a delta
 * before any snapshot, is ignored.
 */
export function applyWatch(v: SetView, msg: WatchTaskSetResponse): Change {
  if (v.set && msg.taskSet && msg.taskSet.id !== v.set.id) return { all: false, indexes: [] };
  if (msg.snapshot) {
    v.tasks = new Map();
    v.parts = new CommandParts();
    v.failed = 0;
    v.snapshots++;
  } else if (v.snapshots === 0) {
    return { all: false, indexes: [] };
  }
  if (msg.taskSet) v.set = msg.taskSet;
  const indexes: number[] = [];
  let added = msg.snapshot;
  for (const t of msg.tasks) {
    const old = v.tasks.get(t.index);
    if (old) {
      if (isFailed(old)) v.failed--;
    } else {
      added = true; // appended: the order must be built again
      v.parts.add(t.spec);
    }
    if (isFailed(t)) v.failed++;
    // The page never shows these four timestamps: dropped, they take a
    // quarter of a 100,000-task set's memory (and of each garbage collection) with them.
    t.disclosedAt = t.executedAt = t.finishedAt = t.canceledAt = undefined;
    v.tasks.set(t.index, t);
    indexes.push(t.index);
  }
  return added ? { all: true } : { all: false, indexes };
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

/** isRunning reports whether a copy of the task runs now. */
export function isRunning(t: Task): boolean {
  return t.copies.some((c) => c.state === CopyState.RUNNING);
}

/** isFailed reports whether a finished task failed: a non-zero exit code, or killed at its time limit. */
export function isFailed(t: Task): boolean {
  return t.state === TaskState.FINISHED && (t.exitCode !== 0 || t.timedOut);
}

/**
 * isRetryable reports whether Retry would run the task again in place: it
 * finished with a failure (non-zero exit or timed out) or was canceled. (A
 * disclosed task that executed and failed is retryable too, but its exit is
 * not shown before it is requested, so the page offers Request for it.)
 */
export function isRetryable(t: Task): boolean {
  return isFailed(t) || t.state === TaskState.CANCELED;
}

/** retryCount counts the tasks "Retry failed" would retry: failed and canceled ones. */
export function retryCount(v: SetView): number {
  return v.failed + Number(v.set?.counts?.canceled ?? 0n);
}

/** restCount counts the tasks "cancel the rest" would cancel: the unrequested ones. */
export function restCount(v: SetView): number {
  const c = v.set?.counts;
  if (c) return Number(c.disclosed + c.executed);
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

/** StateFilter is the table's filter by state: a state, or running (a copy runs) or failed. */
export type StateFilter = "all" | "running" | "failed" | "disclosed" | "executed" | "requested" | "finished" | "canceled";

/** SortKey is the table's order. */
export type SortKey = "index" | "index-desc" | "state" | "service-desc" | "service";

/** Filter is what the table shows: tasks in a state and whose text contains a string. */
export interface Filter {
  state: StateFilter;
  /** text is the task's index when it is a number ("17" or "#17"); otherwise it is matched, case-insensitively, against the command and environment. */
  text: string;
}

const stateOf: Record<string, TaskState> = {
  disclosed: TaskState.DISCLOSED,
  executed: TaskState.EXECUTED,
  requested: TaskState.REQUESTED,
  finished: TaskState.FINISHED,
  canceled: TaskState.CANCELED,
};

/** matchesState reports whether a task passes a state filter. */
export function matchesState(t: Task, f: StateFilter): boolean {
  if (f === "all") return true;
  if (f === "running") return isRunning(t);
  if (f === "failed") return isFailed(t);
  return t.state === stateOf[f];
}

/** searchText is the text a filter's text is looked up in (lower case): "command KEY=value…". */
export function searchText(t: Task): string {
  const env = Object.entries(t.spec?.env ?? {}).map(([k, v]) => `${k}=${v}`);
  return `${commandText(t.spec)} ${env.join(" ")}`.toLowerCase();
}

/** indexQuery is the index a filter's text names ("17", "#17"), or undefined for text. */
export function indexQuery(q: string): number | undefined {
  const m = /^#?(\d{1,10})$/.exec(q.trim());
  return m ? Number(m[1]) : undefined;
}

/**
 * Searcher caches each task's search text: a task's command never changes,
 * and a text filter over 100,000 tasks runs on every keystroke.
 */
export class Searcher {
  private cache = new Map<number, string>();
  /** matches reports whether a task's text contains q (already lower case); "" matches all. */
  matches(t: Task, q: string): boolean {
    if (q === "") return true;
    const n = indexQuery(q);
    if (n !== undefined) return t.index === n;
    let s = this.cache.get(t.index);
    if (s === undefined) {
      s = searchText(t);
      this.cache.set(t.index, s);
    }
    return s.includes(q);
  }
  /** reset forgets the cache (a snapshot may bring other tasks). */
  reset(): void {
    this.cache.clear();
  }
}

// Rank of a state when sorting by state: what needs attention first.
const stateRank: Record<TaskState, number> = {
  [TaskState.REQUESTED]: 0,
  [TaskState.EXECUTED]: 1,
  [TaskState.DISCLOSED]: 2,
  [TaskState.FINISHED]: 3,
  [TaskState.CANCELED]: 4,
  [TaskState.UNSPECIFIED]: 5,
};

/** serviceOf is a task's service time for sorting, -1 when it has none yet. */
function serviceOf(t: Task): number {
  return t.state === TaskState.FINISHED || t.state === TaskState.EXECUTED ? t.serviceSeconds : -1;
}

/** compareTasks orders two tasks by a sort key; ties go by index, so the order is total and stable. */
export function compareTasks(a: Task, b: Task, sort: SortKey): number {
  switch (sort) {
    case "index":
      return a.index - b.index;
    case "index-desc":
      return b.index - a.index;
    case "state": {
      const ra = isRunning(a) ? -1 : stateRank[a.state];
      const rb = isRunning(b) ? -1 : stateRank[b.state];
      return ra - rb || a.index - b.index;
    }
    case "service-desc":
      return serviceOf(b) - serviceOf(a) || a.index - b.index;
    case "service": {
      // Shortest first, tasks without a service time last.
      const sa = serviceOf(a);
      const sb = serviceOf(b);
      if ((sa < 0) !== (sb < 0)) return sa < 0 ? 1 : -1;
      return sa - sb || a.index - b.index;
    }
  }
}

/** buildOrder lists the indexes of the tasks the table shows, in its order. */
export function buildOrder(v: SetView, f: Filter, sort: SortKey, s: Searcher): number[] {
  const q = f.text.trim().toLowerCase();
  const keep: Task[] = [];
  for (const t of v.tasks.values()) if (matchesState(t, f.state) && s.matches(t, q)) keep.push(t);
  keep.sort((a, b) => compareTasks(a, b, sort));
  return keep.map((t) => t.index);
}

/**
 * updateOrder applies changed tasks to an order built by buildOrder, in
 * place, when it can: in set order a task that starts or stops passing the
 * filter is inserted or removed where it belongs. It returns false when the
 * order depends on what changed (sorted by state or service time) and must
 * be built again.
 */
export function updateOrder(order: number[], v: SetView, changed: Iterable<number>, f: Filter, sort: SortKey, s: Searcher): boolean {
  if (sort !== "index" && sort !== "index-desc") return false;
  if (f.state === "all") return true; // the text of a task never changes
  const q = f.text.trim().toLowerCase();
  const desc = sort === "index-desc";
  for (const i of changed) {
    const t = v.tasks.get(i);
    const want = !!t && matchesState(t, f.state) && s.matches(t, q);
    // Binary search for i in the order (ascending or descending).
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (desc ? order[mid] > i : order[mid] < i) lo = mid + 1;
      else hi = mid;
    }
    const has = order[lo] === i;
    if (want && !has) order.splice(lo, 0, i);
    else if (!want && has) order.splice(lo, 1);
  }
  return true;
}

/**
 * windowRange is the slice [start, end) of an n-row list to draw when the
 * rows (each rowH tall) are scrolled by top inside a viewport of height,
 * with overscan rows more on each side.
 */
export function windowRange(top: number, height: number, rowH: number, n: number, overscan: number): { start: number; end: number } {
  if (n === 0 || rowH <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, top) / rowH);
  const start = Math.max(0, Math.min(n, first - overscan));
  const end = Math.min(n, first + Math.ceil(Math.max(0, height) / rowH) + 1 + overscan);
  return { start, end: Math.max(start, end) };
}

/** StateSegment is one part of the stacked bar of tasks by state. */
export interface StateSegment {
  key: "finished" | "requested" | "executed" | "disclosed" | "canceled";
  n: number;
  /** fraction of all tasks, in [0,1]. */
  fraction: number;
}

/**
 * stateSegments splits a set's tasks by state for the stacked bar, in the
 * order work moves (finished first). Running is not a part: a running task
 * is also disclosed or requested, and the bar's legend says how many run.
 */
export function stateSegments(c: TaskCounts | undefined): StateSegment[] {
  const parts: [StateSegment["key"], bigint][] = [
    ["finished", c?.finished ?? 0n],
    ["requested", c?.requested ?? 0n],
    ["executed", c?.executed ?? 0n],
    ["disclosed", c?.disclosed ?? 0n],
    ["canceled", c?.canceled ?? 0n],
  ];
  const total = parts.reduce((s, [, n]) => s + Number(n), 0);
  return parts.map(([key, n]) => ({ key, n: Number(n), fraction: total > 0 ? Number(n) / total : 0 }));
}
