// The watch loop: keeps a WatchTaskSet stream open, reconnecting by itself.

import type { WatchTaskSetResponse } from "./gen/batch/v1/taskset_pb";
import { Backoff } from "./backoff";
import { describeError, isAbort } from "./errors";
import type { Problem } from "./errors";
import { fmtDuration, fmtNumber } from "./format";

/** WatchStatus is what the page says about the stream. */
export type WatchStatus =
  | { kind: "connecting" }
  /** live: messages flow; reconnectedAfterMs is set once a dropped stream came back, and says how long it was down. */
  | { kind: "live"; reconnectedAfterMs?: number }
  | { kind: "reconnecting"; delayMs: number; attempt: number; problem: Problem }
  | { kind: "stopped"; problem: Problem };

/** WatchDeps are the loop's outside world, injected so tests drive it without timers or a network. */
export interface WatchDeps {
  /** open starts one WatchTaskSet stream. */
  open(setId: bigint, signal: AbortSignal): AsyncIterable<WatchTaskSetResponse>;
  /** sleep waits ms, or rejects/returns early when signal aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  backoff: Backoff;
  /** now returns the time in ms (Date.now by default); it only measures how long the stream was down. */
  now?: () => number;
  /** idleMs is how long a stream may stay silent before it is taken for dead (default WATCH_IDLE_MS). */
  idleMs?: number;
  /** watchdog calls onSilent after ms without a reset (default: setTimeout); tests fire it by hand. */
  watchdog?: (ms: number, onSilent: () => void) => Watchdog;
}

/** Watchdog is a restartable timer for one stream. */
export interface Watchdog {
  reset(): void;
  stop(): void;
}

/**
 * WATCH_IDLE_MS: the server sends a keepalive after 15 s without changes, so a
 * stream silent for three of those is a connection that died without closing
 * (a laptop that slept, a network that changed).
 */
export const WATCH_IDLE_MS = 45_000;

/** timerWatchdog is the real WatchDeps.watchdog. */
export function timerWatchdog(ms: number, onSilent: () => void): Watchdog {
  let t = setTimeout(onSilent, ms);
  return {
    reset() {
      clearTimeout(t);
      t = setTimeout(onSilent, ms);
    },
    stop() {
      clearTimeout(t);
    },
  };
}

/** sleep is the real WatchDeps.sleep. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/**
 * runWatch watches a set until signal aborts or a permanent error (not
 * found, permission, sign-in) stops it. Every message goes to onMessage;
 * every change of the stream's status goes to onStatus. A stream that ends
 * or fails is opened again after a backoff, which resets once a stream
 * delivers a message; each new stream starts with a snapshot. A stream
 * that comes back says so in its live status, with how long it was down.
 * A stream that stays silent past idleMs (no change, no keepalive) is taken
 * for a dead connection: it is aborted and opened again the same way.
 */
export async function runWatch(
  setId: bigint,
  deps: WatchDeps,
  onMessage: (m: WatchTaskSetResponse) => void,
  onStatus: (s: WatchStatus) => void,
  signal: AbortSignal,
): Promise<void> {
  const now = deps.now ?? Date.now;
  const idleMs = deps.idleMs ?? WATCH_IDLE_MS;
  const watchdog = deps.watchdog ?? timerWatchdog;
  let lostAt: number | undefined; // when the last live stream dropped, until one delivers again
  onStatus({ kind: "connecting" });
  while (!signal.aborted) {
    let problem: Problem;
    let first = true;
    // Each stream has its own signal: the page's, or the watchdog's.
    const stream = new AbortController();
    const stop = () => stream.abort();
    signal.addEventListener("abort", stop, { once: true });
    let silent = false;
    const dog = watchdog(idleMs, () => {
      silent = true;
      stream.abort();
    });
    const silence: Problem = {
      code: undefined,
      title: "The live stream went silent.",
      detail: `nothing heard for ${fmtDuration(idleMs / 1000)}, not even the server's keepalive`,
      hint: "Reconnecting by itself.",
      retryable: true,
      signIn: false,
    };
    try {
      for await (const m of deps.open(setId, stream.signal)) {
        dog.reset();
        if (first) {
          first = false;
          deps.backoff.reset();
          onStatus(lostAt === undefined ? { kind: "live" } : { kind: "live", reconnectedAfterMs: Math.max(0, now() - lostAt) });
          lostAt = undefined;
        }
        onMessage(m);
      }
      if (signal.aborted) return;
      problem = silent ? silence : {
        code: undefined,
        title: "The live stream ended.",
        detail: "the server closed the stream",
        hint: "Reconnecting by itself.",
        retryable: true,
        signIn: false,
      };
    } catch (err) {
      if (signal.aborted) return;
      if (silent) {
        problem = silence;
      } else {
        if (isAbort(err)) return;
        problem = describeError(err, "Watching the task set");
        if (!problem.retryable) {
          onStatus({ kind: "stopped", problem });
          return;
        }
      }
    } finally {
      dog.stop();
      signal.removeEventListener("abort", stop);
    }
    if (lostAt === undefined && !first) lostAt = now();
    const delayMs = deps.backoff.next();
    onStatus({ kind: "reconnecting", delayMs, attempt: deps.backoff.attempts, problem });
    await deps.sleep(delayMs, signal);
  }
}

/** statusText is what the page shows for a stream status, and the CSS class that colours it. */
export function statusText(s: WatchStatus): { text: string; cls: string } {
  switch (s.kind) {
    case "connecting":
      return { text: "Connecting…", cls: "connecting" };
    case "live":
      return {
        text: s.reconnectedAfterMs === undefined ? "Live" : `Live: reconnected by itself after ${fmtDuration(s.reconnectedAfterMs / 1000)}`,
        cls: "live",
      };
    case "reconnecting":
      return {
        text: `Connection lost (${s.problem.detail || s.problem.title}); reconnecting in ${fmtNumber(s.delayMs / 1000, 1)} s, attempt ${s.attempt}`,
        cls: "reconnecting",
      };
    case "stopped":
      return { text: `Stopped: ${s.problem.title}`, cls: "stopped" };
  }
}
