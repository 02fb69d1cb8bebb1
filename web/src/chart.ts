// The bill chart: billed work beside the work nobody pays for.

import type { BillTotals } from "./gen/batch/v1/billing_pb";

/** Segment is one bar of the bill chart. */
export interface Segment {
  key: "billed" | "executed" | "waste" | "otherFree";
  label: string;
  slotSeconds: number;
  /** fraction of the largest bar, in [0,1], for the bar's length. */
  fraction: number;
}

/**
 * billSegments splits a bill's slot-seconds into billed work and the free
 * parts: executed but never requested, copies that lost a race or were
 * killed or lost, and the rest of the free work (the server's total less
 * those two). Bars are scaled to the largest.
 */
export function billSegments(t: BillTotals | undefined): Segment[] {
  const billed = Math.max(0, t?.billedSlotSeconds ?? 0);
  const free = Math.max(0, t?.freeSlotSeconds ?? 0);
  const executed = Math.min(free, Math.max(0, t?.executedUnrequestedSlotSeconds ?? 0));
  const waste = Math.min(free - executed, Math.max(0, t?.speculativeWasteSlotSeconds ?? 0));
  const other = Math.max(0, free - executed - waste);
  const rows: Omit<Segment, "fraction">[] = [
    { key: "billed", label: "Billed (requested work)", slotSeconds: billed },
    { key: "executed", label: "Free: executed, never requested", slotSeconds: executed },
    { key: "waste", label: "Free: losing, killed or lost copies", slotSeconds: waste },
    { key: "otherFree", label: "Free: other unrequested work", slotSeconds: other },
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
