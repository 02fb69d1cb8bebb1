// The set list's search and filters, read into the server's ListTaskSets
// filters (the ones `batchctl ls` uses): a name glob, states, an owner and
// labels. Pure, so the unit tests pin it.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { SetState } from "./gen/batch/v1/types_pb";
import type { ListTaskSetsRequestSchema } from "./gen/batch/v1/taskset_pb";

/** SetFilter is the set list's search box and filters as typed. */
export interface SetFilter {
  /** q is a name (a part of it, or a glob with * ? [...]) or a set id (42 or #42). */
  q: string;
  /** state is one of StateChoices' values. */
  state: string;
  /** owner (admins): "" for one's own sets, "*" for everyone's, or a user's name. */
  owner: string;
  /** label is KEY=VALUE labels separated by spaces or commas; a set must carry all. */
  label: string;
}

/** StateChoices are the state filter's options: value, label and the states it lists. */
export const StateChoices: { value: string; label: string; states: SetState[] }[] = [
  { value: "", label: "Any state", states: [] },
  { value: "open", label: "Open (waiting, queued, running)", states: [SetState.WAITING, SetState.QUEUED, SetState.RUNNING] },
  { value: "running", label: "Running", states: [SetState.RUNNING] },
  { value: "queued", label: "Queued", states: [SetState.QUEUED] },
  { value: "waiting", label: "Waiting", states: [SetState.WAITING] },
  { value: "ended", label: "Ended (done, failed, canceled)", states: [SetState.DONE, SetState.FAILED, SetState.CANCELED] },
  { value: "done", label: "Done", states: [SetState.DONE] },
  { value: "failed", label: "Failed", states: [SetState.FAILED] },
  { value: "canceled", label: "Canceled", states: [SetState.CANCELED] },
];

/** idOf reads a search for a set id ("42" or "#42"); undefined when it is not one. */
export function idOf(q: string): bigint | undefined {
  const m = /^#?(\d{1,18})$/.exec(q.trim());
  if (!m) return undefined;
  const id = BigInt(m[1]);
  return id > 0n ? id : undefined;
}

/** nameGlob is the glob a name search sends: a glob as typed, plain text as "*text*". */
export function nameGlob(q: string): string {
  const t = q.trim().replace(/^#(?=\d+$)/, "");
  if (t === "") return "";
  return /[*?[]/.test(t) ? t : `*${t}*`;
}

/** parseLabels reads "k=v k2=v2" (or comma-separated); anything else is an error message. */
export function parseLabels(text: string): { key: string; value: string }[] | string {
  const out: { key: string; value: string }[] = [];
  for (const w of text.split(/[\s,]+/)) {
    if (w === "") continue;
    const i = w.indexOf("=");
    if (i <= 0) return `Write labels as KEY=VALUE (got ${JSON.stringify(w)}).`;
    out.push({ key: w.slice(0, i), value: w.slice(i + 1) });
  }
  return out;
}

/** ListRequest is what the list asks the server for. */
export type ListRequest = MessageInitShape<typeof ListTaskSetsRequestSchema>;

/**
 * listRequest is the ListTaskSets request for a filter and a page; owner is
 * read only for admins (the server refuses it to others). An error message
 * comes back for labels it cannot read.
 */
export function listRequest(f: SetFilter, pageToken: string, pageSize: number, admin: boolean): ListRequest | string {
  const labels = parseLabels(f.label);
  if (typeof labels === "string") return labels;
  const req: ListRequest = { pageSize, pageToken, nameGlob: nameGlob(f.q), labels };
  req.states = StateChoices.find((c) => c.value === f.state)?.states ?? [];
  const owner = f.owner.trim();
  if (admin && owner === "*") req.allOwners = true;
  else if (admin && owner !== "") req.owner = owner;
  return req;
}

/** filtered says whether any filter or search is set. */
export function filtered(f: SetFilter): boolean {
  return f.q.trim() !== "" || f.state !== "" || f.owner.trim() !== "" || f.label.trim() !== "";
}

/** SetStateLook is how a set's state is shown: its word, an icon and a class for its colour. */
export interface SetStateLook {
  word: string;
  icon: string;
  cls: string;
}

/** setStateLook is the badge of a set state. */
export function setStateLook(s: SetState): SetStateLook {
  switch (s) {
    case SetState.WAITING:
      return { word: "waiting", icon: "◷", cls: "waiting" };
    case SetState.QUEUED:
      return { word: "queued", icon: "○", cls: "queued" };
    case SetState.RUNNING:
      return { word: "running", icon: "▶", cls: "running" };
    case SetState.DONE:
      return { word: "done", icon: "✓", cls: "done" };
    case SetState.FAILED:
      return { word: "failed", icon: "✕", cls: "failed" };
    case SetState.CANCELED:
      return { word: "canceled", icon: "⊘", cls: "canceled" };
    default:
      return { word: "unknown", icon: "?", cls: "unknown" };
  }
}
