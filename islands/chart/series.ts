/**
 * A panel's series, from the API's columns to what the chart draws. The API writes
 * non-finite values as strings; here they are numbers again (NaN, ±Infinity), live points
 * merge in step order (a step written again replaces the old value, as on the server), and
 * `shapeSeries` gives the chart its points for an x mode, smoothing and scale: the smoothed
 * line, the raw line under it, the band of each downsampling bucket's extremes, and a marker
 * for every point that is not a number. Pure.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { ApiSeries } from "./panel_types.ts";
import { smooth } from "./smooth.ts";
import { xAt, type XMode } from "./x_axis.ts";

/** One run's series of one key, in step order, values as numbers. */
export interface PointSeries {
  runId: string;
  key: string;
  steps: number[];
  /** Unix seconds. */
  walls: number[];
  values: number[];
  /** Each kept point's bucket extremes (downsampled series only). */
  min: number[] | null;
  max: number[] | null;
  /** Points the server holds for this series (or in the range asked for). */
  total: number;
  downsampled: boolean;
}

/** A point as the live stream carries it. */
export interface LivePoint {
  step: number;
  value: number | string;
  wall_time: number;
}

/** A chart point; `y: null` is a gap in the line. */
export interface XY {
  x: number;
  y: number | null;
}

/** `"NaN"`, `"Infinity"`, `"-Infinity"` (and numbers) as numbers. */
export function decodeValue(v: number | string): number {
  if (typeof v === "number") return v;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  const n = Number(v);
  return v.trim() === "" ? NaN : n;
}

/** A series as the API returned it, decoded. */
export function fromApi(s: ApiSeries): PointSeries {
  return {
    runId: s.run_id,
    key: s.key,
    steps: s.steps.slice(),
    walls: s.wall_times.slice(),
    values: s.values.map(decodeValue),
    min: s.min ? s.min.map(decodeValue) : null,
    max: s.max ? s.max.map(decodeValue) : null,
    total: s.total_points,
    downsampled: s.downsampled,
  };
}

/** The first index whose step is ≥ `step` (the length when none is). */
function lowerBound(steps: readonly number[], step: number): number {
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `s` with live points merged in step order: a new step is appended (or inserted where it
 * belongs), a step already there takes the new value and wall time. `s` is left as it was.
 */
export function mergePoints(s: PointSeries, points: readonly LivePoint[]): PointSeries {
  if (!points.length) return s;
  const steps = s.steps.slice();
  const walls = s.walls.slice();
  const values = s.values.slice();
  const min = s.min?.slice() ?? null;
  const max = s.max?.slice() ?? null;
  let added = 0;
  for (const p of points) {
    const v = decodeValue(p.value);
    const last = steps.length - 1;
    const at = last >= 0 && p.step > steps[last] ? steps.length : lowerBound(steps, p.step);
    if (at < steps.length && steps[at] === p.step) {
      walls[at] = p.wall_time;
      values[at] = v;
      // The bucket's extremes still hold its other points; they widen to hold this one.
      if (min && Number.isFinite(v) && !(min[at] <= v)) min[at] = v;
      if (max && Number.isFinite(v) && !(max[at] >= v)) max[at] = v;
      continue;
    }
    steps.splice(at, 0, p.step);
    walls.splice(at, 0, p.wall_time);
    values.splice(at, 0, v);
    min?.splice(at, 0, v);
    max?.splice(at, 0, v);
    added++;
  }
  return { ...s, steps, walls, values, min, max, total: s.total + added };
}

/**
 * A fresh read of a series (the watermark poll) that keeps what `old` already had past the
 * read's last step: points that arrived live while the read was on its way.
 */
export function replaceKeepingTail(old: PointSeries | undefined, fresh: PointSeries): PointSeries {
  if (!old || !old.steps.length) return fresh;
  const lastFresh = fresh.steps.length ? fresh.steps[fresh.steps.length - 1] : -Infinity;
  let i = lowerBound(old.steps, lastFresh);
  while (i < old.steps.length && old.steps[i] <= lastFresh) i++;
  if (i >= old.steps.length) return fresh;
  const tail: LivePoint[] = [];
  for (; i < old.steps.length; i++) {
    tail.push({ step: old.steps[i], value: old.values[i], wall_time: old.walls[i] });
  }
  return mergePoints(fresh, tail);
}

/** How a panel draws its series. */
export interface ShapeOptions {
  x: XMode;
  /** Smoothing weight, 0 to 0.999. */
  smooth: number;
  /** The run's first wall time (Unix s): the origin of relative time. */
  t0: number;
  /** A log y scale: values ≤ 0 cannot be drawn and become gaps. */
  log: boolean;
}

/** What the chart draws for one series. */
export interface ShapedSeries {
  /** The x of every point, in the panel's x mode. */
  xs: number[];
  /** The smoothed values (the raw ones with smoothing off), NaN/±Inf kept. */
  smoothed: number[];
  /** The line: smoothed when smoothing is on; gaps where not drawable. */
  line: XY[];
  /** The raw line drawn faded under the smoothed one; null with smoothing off. */
  raw: XY[] | null;
  /** Each bucket's extremes as a faint band; null when the series was not downsampled. */
  band: { lo: XY[]; hi: XY[] } | null;
  /** A marker for each NaN/±Inf point, at the height of the nearest finite value. */
  marks: XY[];
  /** Points left out because the log scale cannot draw them (≤ 0). */
  hidden: number;
}

/** The chart's points for `s`. */
export function shapeSeries(s: PointSeries, o: ShapeOptions): ShapedSeries {
  const n = s.steps.length;
  const xs = new Array<number>(n);
  for (let i = 0; i < n; i++) xs[i] = xAt(s.steps[i], s.walls[i], o.x, o.t0);
  const smoothed = o.smooth > 0 ? smooth(s.values, o.smooth) : s.values.slice();
  let hidden = 0;
  const drawable = (v: number | undefined): number | null => {
    if (v === undefined || !Number.isFinite(v)) return null;
    return o.log && v <= 0 ? null : v;
  };
  const line: XY[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const v = s.values[i];
    if (o.log && Number.isFinite(v) && v <= 0) hidden++;
    line[i] = { x: xs[i], y: drawable(smoothed[i]) };
  }
  const raw = o.smooth > 0 ? s.values.map((v, i) => ({ x: xs[i], y: drawable(v) })) : null;
  const band = s.min && s.max
    ? {
      lo: s.min.map((v, i) => ({ x: xs[i], y: drawable(v) })),
      hi: s.max.map((v, i) => ({ x: xs[i], y: drawable(v) })),
    }
    : null;
  const marks: XY[] = [];
  for (let i = 0; i < n; i++) {
    if (Number.isFinite(s.values[i])) continue;
    marks.push({ x: xs[i], y: nearestFinite(s.values, i, o.log) });
  }
  return { xs, smoothed, line, raw, band, marks, hidden };
}

/** The nearest drawable value before `i` (else after it): where a NaN's marker sits. */
function nearestFinite(values: readonly number[], i: number, log: boolean): number | null {
  const ok = (v: number) => Number.isFinite(v) && (!log || v > 0);
  for (let d = 1; d < values.length; d++) {
    if (i - d >= 0 && ok(values[i - d])) return values[i - d];
    if (i + d < values.length && ok(values[i + d])) return values[i + d];
  }
  return log ? 1 : 0;
}

/**
 * The y extent of the points drawn between `from` and `to` (x), lines and bands alike, so a
 * zoomed view fits its own data; null when nothing there is drawable.
 */
export function yExtent(
  shaped: readonly ShapedSeries[],
  from: number,
  to: number,
): { min: number; max: number } | null {
  let min = Infinity;
  let max = -Infinity;
  const take = (pts: readonly XY[] | null | undefined) => {
    if (!pts) return;
    for (const p of pts) {
      if (p.y === null || p.x < from || p.x > to) continue;
      if (p.y < min) min = p.y;
      if (p.y > max) max = p.y;
    }
  };
  for (const s of shaped) {
    take(s.line);
    take(s.raw);
    take(s.band?.lo);
    take(s.band?.hi);
  }
  return min <= max ? { min, max } : null;
}

/** The newest point of a series with a finite value, and the best by `direction`. */
export function latestAndBest(
  s: PointSeries,
  direction: MetricDirection | null,
): {
  latest: { step: number; value: number; wall: number } | null;
  best: { step: number; value: number } | null;
} {
  let latest: { step: number; value: number; wall: number } | null = null;
  for (let i = s.steps.length - 1; i >= 0; i--) {
    if (Number.isFinite(s.values[i])) {
      latest = { step: s.steps[i], value: s.values[i], wall: s.walls[i] };
      break;
    }
  }
  if (!direction) return { latest, best: null };
  // A downsampled series keeps each bucket's extremes: the best is among them.
  const pool = (direction === "min" ? s.min : s.max) ?? s.values;
  let best: { step: number; value: number } | null = null;
  for (let i = 0; i < pool.length; i++) {
    const v = Number.isFinite(pool[i]) ? pool[i] : s.values[i];
    if (!Number.isFinite(v)) continue;
    if (!best || (direction === "min" ? v < best.value : v > best.value)) {
      best = { step: s.steps[i], value: v };
    }
  }
  return { latest, best };
}
