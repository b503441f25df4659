/**
 * A metric's trend (improving, flat or worsening, also when well off its best) over its newest
 * points, and a key's step rate from its wall times.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
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
/**
 * A latest level this much worse than the best (relative) is worsening, however flat the
 * recent window: an eval loss that rose 80 % above its minimum and then levelled off.
 */
export const WORSE_THAN_BEST = 0.1;
/** ...and only when the gap is this many times the window's point-to-point noise. */
export const WORSE_THAN_BEST_NOISE = 5;
/** The latest level: the mean of this many newest finite points. */
export const LEVEL_POINTS = 3;
/** How many of the newest points the step rate is measured over. */
export const RATE_WINDOW_POINTS = 50;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Whether a metric is improving, flat or worsening: the mean of the later half of its last
 * `TREND_WINDOW_POINTS` finite points against the earlier half, judged by its direction; and
 * worsening whatever the halves say when its latest level is well off its `best` (see
 * `WORSE_THAN_BEST`), since a metric that rose and levelled off looks flat in a short window.
 */
export function metricTrend(
  w: SeriesWindow,
  direction: MetricDirection,
  best: { value: number; step: number | null } | null = null,
): MetricTrend {
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
      from_best: null,
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
  const halves = flat ? "flat" : improved ? "improving" : "worsening";
  const off = offBest(recent.map((p) => p.value), direction, best);
  const verdict = off?.worse ? "worsening" : halves;
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
    from_best: off?.relative ?? null,
    explanation: (off?.worse ? `${off.text}: worsening; ` : "") +
      `mean of "${w.key}" ${moved} from ${fmt(earlierMean)} to ${fmt(laterMean)}` +
      (relative === null ? "" : ` (${fmtPct(relative)})`) + ` over ${spans}: ${halves}` +
      ` (${better(direction)}; under ${FLAT_RELATIVE_CHANGE * 100}% change is flat)` +
      (off && !off.worse && off.relative > 0 ? `; ${off.text}` : ""),
  };
}

/**
 * How far the latest level (the mean of the newest `LEVEL_POINTS`) is from the best value, in
 * the worse direction, and whether that is worsening: beyond `WORSE_THAN_BEST` and beyond
 * `WORSE_THAN_BEST_NOISE` times the window's noise (a noisy loss sits above its luckiest batch).
 */
function offBest(
  values: number[],
  direction: MetricDirection,
  best: { value: number; step: number | null } | null,
) {
  if (!best || !Number.isFinite(best.value) || Math.abs(best.value) <= 1e-12) return null;
  const level = mean(values.slice(-LEVEL_POINTS));
  const gap = direction === "min" ? level - best.value : best.value - level;
  const relative = gap / Math.abs(best.value);
  let diff2 = 0;
  for (let i = 1; i < values.length; i++) diff2 += (values[i] - values[i - 1]) ** 2;
  const noise = values.length > 1 ? Math.sqrt(diff2 / (2 * (values.length - 1))) : 0;
  const worse = relative >= WORSE_THAN_BEST && gap > WORSE_THAN_BEST_NOISE * noise;
  const text = `the latest level ${fmt(level)} is ${fmtPct(relative)} off its best ` +
    `${fmt(best.value)}${best.step === null ? "" : ` (step ${best.step})`}`;
  return { relative, worse, text };
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
