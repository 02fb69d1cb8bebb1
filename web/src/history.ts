// The charts over time: the server's samples of the last hour (GetHistory)
// as series of queued tasks, running copies and throughput, and the points
// of their lines. Pure, so the unit tests pin it.

import type { HistorySample } from "./gen/batch/v1/history_pb";
import { tsSeconds } from "./format";

/** Series is one line of the charts: its values over time and what it is. */
export interface Series {
  key: "queued" | "running" | "throughput";
  label: string;
  unit: string;
  /** points are [seconds before the newest sample, value], oldest first. */
  points: [number, number][];
  last: number;
  max: number;
  /** window is the seconds the chart spans: the samples' span, from a minute up to the hour. */
  window: number;
}

/** WindowSeconds is how far back the charts reach. */
export const WindowSeconds = 3600;

/**
 * historySeries turns samples (oldest first) into the three series: tasks
 * queued (both classes), copies running, and tasks done per minute.
 */
export function historySeries(samples: HistorySample[], intervalSeconds: number, isSet: boolean): Series[] {
  const newest = samples.length > 0 ? (tsSeconds(samples[samples.length - 1].at) ?? 0) : 0;
  const perMinute = 60 / Math.max(1, intervalSeconds);
  const make = (key: Series["key"], label: string, unit: string, f: (s: HistorySample) => number): Series => {
    const points = samples.map((s): [number, number] => [newest - (tsSeconds(s.at) ?? newest), f(s)]).filter(([ago]) => ago <= WindowSeconds);
    const values = points.map(([, v]) => v);
    const span = points.length > 0 ? points[0][0] : 0;
    const window = Math.min(WindowSeconds, Math.max(60, span));
    return { key, label, unit, points, last: values.length > 0 ? values[values.length - 1] : 0, max: Math.max(0, ...values), window };
  };
  return [
    make("queued", "Queued tasks", "tasks", (s) => Number(s.queuedRequested + s.queuedDisclosed)),
    make("running", isSet ? "Running tasks" : "Running copies", isSet ? "tasks" : "copies", (s) => Number(s.running)),
    make("throughput", "Throughput", "tasks/min", (s) => Number(s.done) * perMinute),
  ];
}

/**
 * linePoints is an SVG polyline's points for a series in a w×h box: time
 * runs left to right over its window (now at the right edge), values up
 * from the bottom, scaled to the series' max (a flat line at the bottom
 * when all are 0).
 */
export function linePoints(s: Series, w: number, h: number): string {
  const top = s.max > 0 ? s.max : 1;
  const r = (n: number) => Math.round(n * 10) / 10;
  return s.points.map(([ago, v]) => `${r(w - (ago / s.window) * w)},${r(h - (v / top) * h)}`).join(" ");
}

/** fmtValue writes a series' value: whole numbers with separators, a rate with one decimal below 10. */
export function fmtValue(v: number): string {
  if (v !== Math.round(v) && v < 10) return v.toFixed(1);
  return Math.round(v).toLocaleString("en");
}

/** historySummary is the charts' text alternative. */
export function historySummary(series: Series[]): string {
  if (series.every((s) => s.points.length === 0)) return "No samples yet: the server takes one every 10 seconds.";
  return series.map((s) => `${s.label}: ${fmtValue(s.last)} ${s.unit} now, at most ${fmtValue(s.max)} in the last hour`).join("; ") + ".";
}

/** fmtAgo is the left edge's label: how long ago the window starts. */
export function fmtAgo(seconds: number): string {
  if (seconds >= 3600) return "1 h ago";
  if (seconds >= 120) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds)} s ago`;
}
