// The small timeline of one task in its own view: for each attempt, when it
// was disclosed or queued, when each copy (speculative ones too) started
// and ended, which copy won, and how the attempt ended. Pure, so that the
// unit tests pin it.

import { copyStateName, taskStateName, tsSeconds } from "./format";
import { CopyState, TaskState } from "./gen/batch/v1/types_pb";
import type { Task } from "./gen/batch/v1/types_pb";

/** Bar is one copy on an attempt's timeline. */
export interface Bar {
  id: bigint;
  label: string;
  speculative: boolean;
  /** state is the copy's state word (running, suspended, won, killed, lost). */
  state: string;
  won: boolean;
  start: number;
  /** end is when it ended, or now for a copy still running or suspended. */
  end: number;
  open: boolean;
  /** suspendedSeconds is how long the copy was held suspended on the server's order, the suspension under way included. */
  suspendedSeconds: number;
}

/** Event is one moment of an attempt, in seconds since the epoch. */
export interface Event {
  at: number;
  what: string;
}

/** Span is one attempt on the timeline. */
export interface Span {
  attempt: number;
  current: boolean;
  /** state is how the attempt stands or ended. */
  state: string;
  from: number;
  to: number;
  events: Event[];
  bars: Bar[];
}

/** timeline lays out a task's attempts (as GetTask returns it) and their copies, at now (seconds since the epoch). */
export function timeline(t: Task, now: number): Span[] {
  const spans: Span[] = [];
  const attempts = [
    ...t.attempts.map((a) => ({
      attempt: a.attempt,
      current: false,
      state: a.lost ? "lost" : taskStateName(a.state),
      disclosed: undefined as number | undefined,
      requested: tsSeconds(a.requestedAt),
      executed: tsSeconds(a.executedAt),
      ended: tsSeconds(a.finishedAt) ?? tsSeconds(a.canceledAt) ?? tsSeconds(a.retriedAt),
      endWord: a.state === TaskState.CANCELED ? "canceled" : a.state === TaskState.FINISHED ? "finished" : "retried",
      exit: a.state === TaskState.FINISHED ? a.exitCode : undefined,
      win: a.winCopy,
    })),
    {
      attempt: t.attempt,
      current: true,
      state: taskStateName(t.state),
      disclosed: t.attempts.length === 0 ? tsSeconds(t.disclosedAt) : undefined,
      requested: tsSeconds(t.requestedAt),
      executed: tsSeconds(t.executedAt),
      ended: tsSeconds(t.finishedAt) ?? tsSeconds(t.canceledAt),
      endWord: t.state === TaskState.CANCELED ? "canceled" : "finished",
      exit: t.state === TaskState.FINISHED ? t.exitCode : undefined,
      win: 0n,
    },
  ];
  for (const a of attempts) {
    const events: Event[] = [];
    if (a.disclosed !== undefined) events.push({ at: a.disclosed, what: "disclosed" });
    if (a.requested !== undefined) events.push({ at: a.requested, what: "requested (queued)" });
    const bars: Bar[] = [];
    for (const c of t.copies) {
      if (c.attempt !== a.attempt && !(c.attempt === 0 && a.current)) continue;
      const start = tsSeconds(c.startedAt);
      if (start === undefined) continue;
      const ended = tsSeconds(c.endedAt);
      const open = c.state === CopyState.RUNNING || c.state === CopyState.SUSPENDED;
      const won = c.state === CopyState.WON || (a.win !== 0n && c.id === a.win);
      const who = `${c.speculative ? "speculative copy" : "copy"} #${c.id} on ${c.worker || "?"}/${c.slot}`;
      events.push({ at: start, what: `${who} started` });
      if (ended !== undefined && !open) events.push({ at: ended, what: `copy #${c.id} ${won ? "won" : copyStateName(c.state)}` });
      const since = tsSeconds(c.suspendedAt);
      if (since !== undefined) events.push({ at: since, what: `copy #${c.id} suspended` });
      bars.push({
        id: c.id,
        label: who,
        speculative: c.speculative,
        state: copyStateName(c.state),
        won,
        start,
        end: open || ended === undefined ? Math.max(now, start) : ended,
        open,
        suspendedSeconds: c.suspendedSeconds + (since !== undefined ? Math.max(0, now - since) : 0),
      });
    }
    if (a.executed !== undefined && bars.length === 0) events.push({ at: a.executed, what: "executed" });
    if (a.ended !== undefined) events.push({ at: a.ended, what: a.exit !== undefined ? `${a.endWord}, exit ${a.exit}` : a.endWord });
    events.sort((x, y) => x.at - y.at);
    const times = [...events.map((e) => e.at), ...bars.map((b) => b.end)];
    const from = times.length > 0 ? Math.min(...times) : now;
    const openEnd = a.ended === undefined && a.current;
    const to = Math.max(from, ...times, openEnd ? now : from);
    spans.push({ attempt: a.attempt, current: a.current, state: a.state, from, to, events, bars });
  }
  return spans;
}
