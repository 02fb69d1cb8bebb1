// Reconnect backoff for the watch stream.

/** BackoffOptions tunes a Backoff; random is injected so tests are exact. */
export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  factor?: number;
  /** jitter in [0,1): each delay is shortened by up to this fraction. */
  jitter?: number;
  random?: () => number;
}

/**
 * Backoff yields growing delays between reconnect attempts: initialMs,
 * doubling up to maxMs, each shortened by a random jitter so that many pages
 * do not reconnect in step. reset() after a stream delivered a message.
 */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private n = 0;

  constructor(o: BackoffOptions = {}) {
    this.initialMs = o.initialMs ?? 250;
    this.maxMs = o.maxMs ?? 8000;
    this.factor = o.factor ?? 2;
    this.jitter = o.jitter ?? 0.2;
    this.random = o.random ?? Math.random;
  }

  /** attempts is how many delays were handed out since the last reset. */
  get attempts(): number {
    return this.n;
  }

  /** next returns the delay before the next attempt, in milliseconds. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * Math.pow(this.factor, this.n));
    this.n++;
    return Math.round(base * (1 - this.jitter * this.random()));
  }

  /** reset starts the sequence again from initialMs. */
  reset(): void {
    this.n = 0;
  }
}
