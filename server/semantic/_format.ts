/** Number, time and wording helpers for the semantic layer's summaries. Private to this folder. */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { MetricNumber, NextAction, SemanticTool } from "../../protocol/objects.ts";
import { encodeMetricValue } from "../../protocol/objects.ts";
import { fmtNumber } from "../../lib/format.ts";

export { fmtDuration, fmtPct, secondsBetween } from "../../lib/format.ts";

/** A next action; the one way answers of this folder build them. */
export function act(tool: SemanticTool, args: Record<string, unknown>, why: string): NextAction {
  return { tool, args, why };
}

/** A number as a summary quotes it (lib/format.ts), nothing as `n/a`. */
export function fmt(v: number | null | undefined): string {
  return v === null || v === undefined ? "n/a" : fmtNumber(v);
}

/** "lower is better" or "higher is better". */
export const better = (direction: MetricDirection) =>
  direction === "min" ? "lower is better" : "higher is better";

/** A number for JSON: finite numbers as they are, the others as strings. */
export const jsonMetric = (v: number): MetricNumber => encodeMetricValue(v);

/** Whether `a` is better than `b` in `direction`. */
export const isBetter = (a: number, b: number, direction: MetricDirection) =>
  direction === "min" ? a < b : a > b;
