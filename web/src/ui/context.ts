// What every view gets from the page shell.

import type { Clients } from "../api";
import type { Problem } from "../errors";
import type { Route } from "../route";

/** Ctx is handed to a view when it mounts; signal aborts when the view goes away. */
export interface Ctx {
  clients: Clients;
  signal: AbortSignal;
  /** fail shows an error from a call; action names what was tried. */
  fail(err: unknown, action: string): void;
  /** problem shows an error already described. */
  problem(p: Problem): void;
  /** notify announces a success in the status line; carry keeps it across the navigation it leads to. */
  notify(message: string, carry?: boolean): void;
  /** clearProblem removes a shown error once the person acted on it. */
  clearProblem(): void;
  /** now returns the time in seconds since the epoch. */
  now(): number;
  /** onRoute hears the routes that stay within the view's set (a task opened or closed), which do not mount the view again. */
  onRoute(fn: (r: Route) => void): void;
}
