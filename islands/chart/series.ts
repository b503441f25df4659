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
  /**
   * Columns the faded raw line and the band are reduced to (about the panel's width in
   * pixels / 4): each column keeps its lowest and highest point, so no spike is lost. 0 or
   * absent keeps every point. The line itself and the readout always keep every point.
   */
  columns?: number;
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
  /**
   * Each bucket's extremes as a faint band, its edges at the same xs with the same gaps;
   * null when the series was not downsampled.
   */
  band: { lo: XY[]; hi: XY[] } | null;
  /** A marker for each NaN/±Inf point, at the height of the nearest finite value. */
  marks: XY[];
  /** Points left out because the log scale cannot draw them (≤ 0). */
  hidden: number;
}

/**
 * What does not change with the smoothing weight, kept while only the weight changes; its
 * `line` holds a point per x, whose ys each weight writes in place (the chart then keeps its
 * elements for them).
 */
export type SeriesFrame = Omit<ShapedSeries, "smoothed">;

const drawableFor = (log: boolean) => (v: number | undefined): number | null => {
  if (v === undefined || !Number.isFinite(v)) return null;
  return log && v <= 0 ? null : v;
};

/**
 * The column (0 … `columns` - 1) of each x, for `columns` equal slices of the x range; null
 * when there are not more points than two a column (nothing to reduce).
 */
function columnsOf(xs: readonly number[], columns: number | undefined): Int32Array | null {
  const n = xs.length;
  if (!columns || columns < 1 || n <= 2 * columns) return null;
  const lo = xs[0];
  const span = xs[n - 1] - lo;
  if (!(span > 0)) return null;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(((xs[i] - lo) / span) * columns);
    out[i] = c < 0 ? 0 : c >= columns ? columns - 1 : c;
  }
  return out;
}

/**
 * The line through `ys` with each column reduced to its lowest and highest point, in x order,
 * and a gap where the column held a point that cannot be drawn; it still starts at the first
 * point and ends at the last.
 */
function envelopeLine(
  xs: readonly number[],
  ys: readonly (number | null)[],
  col: Int32Array,
): XY[] {
  const out: XY[] = [];
  const n = xs.length;
  let i = 0;
  while (i < n) {
    const c = col[i];
    let lo = -1;
    let hi = -1;
    let gap = -1;
    let j = i;
    for (; j < n && col[j] === c; j++) {
      const y = ys[j];
      if (y === null) {
        if (gap < 0) gap = j;
        continue;
      }
      if (lo < 0 || y < ys[lo]!) lo = j;
      if (hi < 0 || y > ys[hi]!) hi = j;
    }
    const ends = [i === 0 ? 0 : -1, j === n ? n - 1 : -1];
    const keep = [lo, hi, gap, ...ends].filter((k, at, all) => k >= 0 && all.indexOf(k) === at);
    keep.sort((a, b) => a - b);
    for (const k of keep) out.push({ x: xs[k], y: ys[k] });
    i = j;
  }
  return out;
}

/**
 * The band with each column reduced to its lowest low and highest high, both held from the
 * column's first x to its last, so the band still spans every point; a column that held a
 * bucket without a drawable extreme ends in a gap. Both edges have the same xs and gaps, so
 * the band fills between them point by point.
 */
function envelopeBand(
  xs: readonly number[],
  los: readonly (number | null)[],
  his: readonly (number | null)[],
  col: Int32Array,
): { lo: XY[]; hi: XY[] } {
  const lo: XY[] = [];
  const hi: XY[] = [];
  const push = (x: number, l: number | null, h: number | null) => {
    lo.push({ x, y: l });
    hi.push({ x, y: h });
  };
  const n = xs.length;
  let i = 0;
  while (i < n) {
    const c = col[i];
    let l: number | null = null;
    let h: number | null = null;
    let gap = false;
    let j = i;
    for (; j < n && col[j] === c; j++) {
      const a = los[j];
      const b = his[j];
      if (a === null || b === null) {
        gap = true;
        continue;
      }
      l = l === null ? a : Math.min(l, a);
      h = h === null ? b : Math.max(h, b);
    }
    push(xs[i], l, h);
    if (j - 1 > i) push(xs[j - 1], l, h);
    if (gap && l !== null) push(xs[j - 1], null, null);
    i = j;
  }
  return { lo, hi };
}

/** The parts of `s`'s drawing that the smoothing weight does not change. */
export function shapeFrame(s: PointSeries, o: ShapeOptions): SeriesFrame {
  const n = s.steps.length;
  const xs = new Array<number>(n);
  for (let i = 0; i < n; i++) xs[i] = xAt(s.steps[i], s.walls[i], o.x, o.t0);
  const drawable = drawableFor(o.log);
  let hidden = 0;
  for (let i = 0; i < n; i++) {
    const v = s.values[i];
    if (o.log && Number.isFinite(v) && v <= 0) hidden++;
  }
  const col = columnsOf(xs, o.columns);
  let raw: XY[] | null = null;
  if (o.smooth > 0) {
    const ys = s.values.map(drawable);
    raw = col ? envelopeLine(xs, ys, col) : ys.map((y, i) => ({ x: xs[i], y }));
  }
  let band: SeriesFrame["band"] = null;
  if (s.min && s.max) {
    // A bucket is drawn where both its extremes are (a log scale cannot draw a low ≤ 0).
    const lo = s.min.map(drawable);
    const hi = s.max.map(drawable);
    for (let i = 0; i < n; i++) if (lo[i] === null || hi[i] === null) lo[i] = hi[i] = null;
    band = col ? envelopeBand(xs, lo, hi, col) : {
      lo: lo.map((y, i) => ({ x: xs[i], y })),
      hi: hi.map((y, i) => ({ x: xs[i], y })),
    };
  }
  const marks: XY[] = [];
  for (let i = 0; i < n; i++) {
    if (Number.isFinite(s.values[i])) continue;
    marks.push({ x: xs[i], y: nearestFinite(s.values, i, o.log) });
  }
  const line: XY[] = new Array(n);
  for (let i = 0; i < n; i++) line[i] = { x: xs[i], y: null };
  return { xs, line, raw, band, marks, hidden };
}

/**
 * The chart's points for `s`. Pass the `frame` of the same series, x mode, scale and columns
 * (with smoothing on or off as now) to redraw only what the weight changes: its line's ys are
 * written in place, so a shape made earlier from the same frame shows the new weight too.
 */
export function shapeSeries(
  s: PointSeries,
  o: ShapeOptions,
  frame: SeriesFrame = shapeFrame(s, o),
): ShapedSeries {
  const smoothed = o.smooth > 0 ? smooth(s.values, o.smooth) : s.values.slice();
  const line = frame.line;
  const log = o.log;
  for (let i = 0; i < line.length; i++) {
    // As `drawableFor(log)`, inline: this runs for every point at each step of the slider.
    const v = smoothed[i];
    line[i].y = v === undefined || !Number.isFinite(v) || (log && v <= 0) ? null : v;
  }
  return { ...frame, smoothed };
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
