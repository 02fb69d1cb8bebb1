// Free work: what ran and nobody pays for, in DESIGN.md's four parts. The
// bill, the cluster view and the chart take the parts, their order and
// their names from here; the keys are the server's part names (as in
// /metrics and batchctl).

import type { FreeWork } from "./gen/batch/v1/types_pb";

/** FreePartKey names one part of free work as the server does. */
export type FreePartKey = "executed_unrequested" | "speculative_lost" | "canceled" | "lost_with_worker";

/** FreePart is one part of free work with its slot-seconds. */
export interface FreePart {
  key: FreePartKey;
  label: string;
  slotSeconds: number;
}

const parts: { key: FreePartKey; label: string; of: (f: FreeWork) => number }[] = [
  { key: "executed_unrequested", label: "executed but never requested", of: (f) => f.executedUnrequestedSlotSeconds },
  { key: "speculative_lost", label: "losing speculative copies", of: (f) => f.speculativeLostSlotSeconds },
  { key: "canceled", label: "canceled", of: (f) => f.canceledSlotSeconds },
  { key: "lost_with_worker", label: "lost with a worker", of: (f) => f.lostWithWorkerSlotSeconds },
];

/** freeParts returns the four parts of f in order (zeros when f is absent). */
export function freeParts(f: FreeWork | undefined): FreePart[] {
  return parts.map((p) => ({ key: p.key, label: p.label, slotSeconds: f ? Math.max(0, p.of(f)) : 0 }));
}
