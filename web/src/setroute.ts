// Where a set's copies may run: the pool and partition a set was routed
// to when it was disclosed (batchctl disclose --pool, --partition).

/** Routed is what routeText reads of a set. */
export interface Routed {
  readonly pool: string;
  readonly partition: string;
}

/** routeText says where a set's copies run ("" for a set that runs anywhere). */
export function routeText(ts: Routed): string {
  const parts: string[] = [];
  if (ts.pool) parts.push(`pool ${ts.pool}`);
  if (ts.partition) parts.push(`partition ${ts.partition}`);
  return parts.length ? `runs only in ${parts.join(", ")}` : "";
}
