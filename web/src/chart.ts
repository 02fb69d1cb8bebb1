// The bill chart: billed work beside the work nobody pays for.

import type { BillTotals } from "./gen/batch/v1/billing_pb";
import { freeParts, type FreePartKey } from "./free";

/** Segment is one bar of the bill chart. */
export interface Segment {
  key: "billed" | FreePartKey;
  label: string;
  slotSeconds: number;
  /** fraction of the largest bar, in [0,1], for the bar's length. */
  fraction: number;
}

/**
 * billSegments splits a bill's slot-seconds into billed work and the four
 * parts of free work (free.ts). Bars are scaled to the largest.
 */
export function billSegments(t: BillTotals | undefined): Segment[] {
  const rows: Omit<Segment, "fraction">[] = [
    { key: "billed", label: "Billed (requested work)", slotSeconds: Math.max(0, t?.billedSlotSeconds ?? 0) },
    ...freeParts(t?.free).map((p) => ({ key: p.key, label: `Free: ${p.label}`, slotSeconds: p.slotSeconds })),
  ];
  const max = Math.max(...rows.map((r) => r.slotSeconds));
  return rows.map((r) => ({ ...r, fraction: max > 0 ? r.slotSeconds / max : 0 }));
}

/** chartSummary is the text alternative of the chart for screen readers. */
export function chartSummary(t: BillTotals | undefined): string {
  const billed = t?.billedSlotSeconds ?? 0;
  const free = t?.freeSlotSeconds ?? 0;
  const total = billed + free;
  if (total <= 0) return "No work has run for you yet.";
  const pct = Math.round((billed / total) * 100);
  return `${pct}% of the slot time spent on your work is billed; ${100 - pct}% is free.`;
}
