/** Number, time and wording helpers for the semantic layer's summaries. Private to this folder. */
import type { MetricNumber, NextAction, SemanticTool } from "../../protocol/objects.ts";
import { encodeMetricValue } from "../../protocol/objects.ts";

/** A next action; the one way answers of this folder build them. */
export function act(tool: SemanticTool, args: Record<string, unknown>, why: string): NextAction {
  return { tool, args, why };
}

/** A number as a summary quotes it: 4 significant digits, NaN and ±Infinity spelled out. */
export function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined) return "n/a";
  if (!Number.isFinite(v)) return String(encodeMetricValue(v));
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** A fraction as a signed percentage: `-40.4%`. */
export function fmtPct(fraction: number): string {
  const p = Math.round(fraction * 1000) / 10;
  return `${p > 0 ? "+" : ""}${p}%`;
}

/** Seconds as `1h 02m`, `3m 05s` or `42s`. */
export function fmtDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** "lower is better" or "higher is better". */
export const better = (direction: "min" | "max") =>
  direction === "min" ? "lower is better" : "higher is better";

/** A number for JSON: finite numbers as they are, the others as strings. */
export const jsonMetric = (v: number): MetricNumber => encodeMetricValue(v);

/** Whether `a` is better than `b` in `direction`. */
export const isBetter = (a: number, b: number, direction: "min" | "max") =>
  direction === "min" ? a < b : a > b;

/** Seconds between two ISO times (or from `from` to `now`). */
export function secondsBetween(from: string | null, to: string | null, now: Date): number | null {
  if (!from) return null;
  const start = Date.parse(from);
  const end = to ? Date.parse(to) : now.getTime();
  if (!Number.isFinite(start) || !Number.isFinite(end)) return null;
  return Math.max(0, (end - start) / 1000);
}
