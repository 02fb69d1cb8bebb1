// Errors from the server, turned into something a person can act on.

import { Code, ConnectError } from "@connectrpc/connect";

/** Problem is an error as the page shows it. */
export interface Problem {
  code: Code | undefined;
  /** title says what went wrong, starting from what the person tried. */
  title: string;
  /** detail is the server's own message (safe to show, per DESIGN.md). */
  detail: string;
  /** hint says what to do about it. */
  hint: string;
  /** retryable is true when the same call may work later unchanged. */
  retryable: boolean;
  /** signIn is true when a (new) token is needed. */
  signIn: boolean;
}

const hints: Partial<Record<Code, [string, string, boolean]>> = {
  [Code.InvalidArgument]: ["the server rejected the input", "Correct the input and try again.", false],
  [Code.NotFound]: ["it was not found", "It may belong to another user or never existed; pick another from the list.", false],
  [Code.AlreadyExists]: ["it already exists", "Nothing was changed; reload the list to see it.", false],
  [Code.FailedPrecondition]: ["it is not possible in the current state", "Wait for the task to change state, or request it first.", false],
  [Code.Aborted]: ["it conflicted with another change", "Try again.", true],
  [Code.PermissionDenied]: ["you are not allowed to do this", "Ask an administrator, or sign in with another token.", false],
  [Code.Unauthenticated]: ["the server needs you to sign in", "Enter your token above and sign in.", false],
  [Code.ResourceExhausted]: ["the server is busy or a limit was reached", "The server's message names the limit: wait a moment, send less at once, or cancel or finish some of your work, then try again.", true],
  [Code.Unavailable]: ["the server cannot be reached", "Check that batchd is running and the network is up; the page retries by itself.", true],
  [Code.DeadlineExceeded]: ["the server took too long to answer", "Try again.", true],
  [Code.Internal]: ["the server hit an internal error", "Try again; if it keeps failing, the server log has the details.", true],
  [Code.Unimplemented]: ["this server does not offer that call", "The server may be older than the page; reload or upgrade it.", false],
  [Code.Canceled]: ["the call was canceled", "Try again.", true],
  [Code.Unknown]: ["the call failed", "Check that batchd is running; try again.", true],
};

/** describeError turns an error from a call into a Problem; action names what was tried ("Request task 3"). */
export function describeError(err: unknown, action: string): Problem {
  const ce = ConnectError.from(err);
  let code = ce.code;
  let detail = ce.rawMessage;
  // A fetch that never reached a server shows up as Unknown "Failed to fetch".
  if (code === Code.Unknown && /failed to fetch|networkerror|load failed|network/i.test(detail)) {
    code = Code.Unavailable;
  }
  const [what, hint, retryable] = hints[code] ?? ["the call failed", "Try again.", true];
  return {
    code,
    title: `${action}: ${what}.`,
    detail,
    hint,
    retryable,
    signIn: code === Code.Unauthenticated,
  };
}

/** isAbort reports whether err is the page itself canceling a call (navigation, new watch). */
export function isAbort(err: unknown): boolean {
  if (err instanceof DOMException && err.name === "AbortError") return true;
  return err instanceof ConnectError && err.code === Code.Canceled;
}
