// The page's routes, kept in location.hash so the back button works and a
// view can be shared: a set, one of its tasks (and a line of its output),
// and the table's filter and sort.

/** SetsRoute is the task sets view, with the set, task and table state it names. */
export interface SetsRoute {
  view: "sets";
  setId?: bigint;
  /** task is the task whose own view is open (#/sets/N/tasks/I). */
  task?: number;
  /** line is the output line the task view marks (#/sets/N/tasks/I/L42, or ?line=42). */
  line?: number;
  /** state, sort and q are the table's filter by state, its order and its text filter. */
  state?: string;
  sort?: string;
  q?: string;
}

/** Route is one view of the page. */
export type Route = SetsRoute | { view: "bill" } | { view: "cluster" };

const idRe = /^[1-9]\d{0,18}$/;
const indexRe = /^(0|[1-9]\d{0,9})$/;
const lineRe = /^[1-9]\d{0,9}$/;

/** parseRoute reads a location.hash ("#/sets/12", "#/sets/12/tasks/3/L7?state=failed", "#/bill"); anything else is the task sets view. */
export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#\/?/, "");
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  const parts = path.split("/").filter((p) => p !== "");
  if (parts[0] === "bill") return { view: "bill" };
  if (parts[0] === "cluster") return { view: "cluster" };
  if (parts[0] !== "sets" || !parts[1] || !idRe.test(parts[1])) return { view: "sets" };
  const r: SetsRoute = { view: "sets", setId: BigInt(parts[1]) };
  if (parts[2] === "tasks" && parts[3] && indexRe.test(parts[3]) && Number(parts[3]) <= 2147483647) {
    r.task = Number(parts[3]);
    const l = parts[4]?.startsWith("L") ? parts[4].slice(1) : params.get("line") ?? "";
    if (lineRe.test(l)) r.line = Number(l);
  }
  for (const k of ["state", "sort", "q"] as const) {
    const v = params.get(k);
    if (v) r[k] = v;
  }
  return r;
}

/** routeHash is the hash of a route. */
export function routeHash(r: Route): string {
  if (r.view !== "sets" || r.setId === undefined) return `#/${r.view}`;
  let s = `#/sets/${r.setId}`;
  if (r.task !== undefined) {
    s += `/tasks/${r.task}`;
    if (r.line !== undefined) s += `/L${r.line}`;
  }
  const p = new URLSearchParams();
  for (const k of ["state", "sort", "q"] as const) if (r[k]) p.set(k, r[k]!);
  const qs = p.toString();
  return qs ? `${s}?${qs}` : s;
}

/** sameSet says whether two routes show the same set, so that going from one to the other keeps the set's view (and its stream). */
export function sameSet(a: Route | undefined, b: Route): boolean {
  return !!a && a.view === "sets" && b.view === "sets" && a.setId !== undefined && a.setId === b.setId;
}
