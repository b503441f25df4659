import type { MetricTrend } from "../../protocol/objects.ts";
import { better, fmt, fmtPct } from "./_format.ts";

/** Recent points of one key, oldest first, in columns. */
export interface SeriesWindow {
  key: string;
  steps: number[];
  values: number[];
  /** Unix seconds. */
  wall_times: number[];
}

/** How many of the newest finite points a trend compares (earlier half against later half). */
export const TREND_WINDOW_POINTS = 50;
/** Fewer finite points than this give no trend. */
export const TREND_MIN_POINTS = 4;
/** A relative change of the mean below this (2 %) is flat. */
export const FLAT_RELATIVE_CHANGE = 0.02;
/** How many of the newest points the step rate is measured over. */
export const RATE_WINDOW_POINTS = 50;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Whether a metric is improving, flat or worsening: the mean of the later half of its last
 * `TREND_WINDOW_POINTS` finite points against the earlier half, judged by its direction.
 */
export function metricTrend(w: SeriesWindow, direction: "min" | "max"): MetricTrend {
  const points: { step: number; value: number }[] = [];
  for (let i = 0; i < w.steps.length; i++) {
    if (Number.isFinite(w.values[i])) points.push({ step: w.steps[i], value: w.values[i] });
  }
  const recent = points.slice(-TREND_WINDOW_POINTS);
  if (recent.length < TREND_MIN_POINTS) {
    return {
      verdict: "unknown",
      window: null,
      earlier_mean: null,
      later_mean: null,
      change: null,
      relative_change: null,
      explanation: `"${w.key}" has ${recent.length} finite recent point` +
        `${recent.length === 1 ? "" : "s"}; a trend needs ${TREND_MIN_POINTS}`,
    };
  }
  const half = Math.floor(recent.length / 2);
  const earlier = recent.slice(0, half);
  const later = recent.slice(recent.length - half);
  const earlierMean = mean(earlier.map((p) => p.value));
  const laterMean = mean(later.map((p) => p.value));
  const change = laterMean - earlierMean;
  const scale = Math.abs(earlierMean);
  const relative = scale > 1e-12 ? change / scale : (Math.abs(change) <= 1e-12 ? 0 : null);
  const flat = relative !== null && Math.abs(relative) < FLAT_RELATIVE_CHANGE;
  const improved = direction === "min" ? change < 0 : change > 0;
  const verdict = flat ? "flat" : improved ? "improving" : "worsening";
  const moved = change < 0 ? "fell" : change > 0 ? "rose" : "stayed";
  const spans = `steps ${earlier[0].step}–${earlier[earlier.length - 1].step} → ` +
    `${later[0].step}–${later[later.length - 1].step}`;
  return {
    verdict,
    window: {
      from_step: recent[0].step,
      to_step: recent[recent.length - 1].step,
      points: recent.length,
    },
    earlier_mean: earlierMean,
    later_mean: laterMean,
    change,
    relative_change: relative,
    explanation: `mean of "${w.key}" ${moved} from ${fmt(earlierMean)} to ${fmt(laterMean)}` +
      (relative === null ? "" : ` (${fmtPct(relative)})`) + ` over ${spans}: ${verdict}` +
      ` (${better(direction)}; under ${FLAT_RELATIVE_CHANGE * 100}% change is flat)`,
  };
}

/**
 * Steps per second over the last `RATE_WINDOW_POINTS` points of a key, from their wall times;
 * null when the window spans no time or no steps.
 */
export function stepRate(
  w: SeriesWindow,
): { steps_per_s: number; key: string; window_points: number } | null {
  const n = w.steps.length;
  const from = Math.max(0, n - RATE_WINDOW_POINTS);
  if (n - from < 2) return null;
  const steps = w.steps[n - 1] - w.steps[from];
  const seconds = w.wall_times[n - 1] - w.wall_times[from];
  if (!(steps > 0) || !(seconds > 0)) return null;
  return { steps_per_s: steps / seconds, key: w.key, window_points: n - from };
}
