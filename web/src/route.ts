// The page's routes, kept in location.hash so the back button works.

/** Route is one view of the page. */
export type Route = { view: "sets"; setId?: bigint } | { view: "bill" } | { view: "cluster" };

/** parseRoute reads a location.hash ("#/sets/12", "#/bill"); anything else is the task sets view. */
export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "");
  if (parts[0] === "bill") return { view: "bill" };
  if (parts[0] === "cluster") return { view: "cluster" };
  if (parts[0] === "sets" && parts[1] && /^[1-9]\d{0,18}$/.test(parts[1])) {
    return { view: "sets", setId: BigInt(parts[1]) };
  }
  return { view: "sets" };
}

/** routeHash is the hash of a route. */
export function routeHash(r: Route): string {
  if (r.view === "sets" && r.setId !== undefined) return `#/sets/${r.setId}`;
  return `#/${r.view}`;
}
