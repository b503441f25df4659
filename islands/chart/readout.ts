/**
 * The exact readout under the pointer: for an x on the chart, each visible run's point
 * nearest to it, as the tooltip's lines. The title is the point nearest of all (its step,
 * time since its run's start and wall-clock time); each run's line is its smoothed value
 * with the raw one in brackets while smoothing is on. Pure.
 *
 * @module
 */
import { fmtInt, fmtMetric } from "../_format.ts";
import { formatClock, formatRelative } from "./x_axis.ts";

/** One visible run's drawn series, as the readout reads it. */
export interface ReadoutInput {
  id: string;
  label: string;
  color: string;
  /** x of each point in the panel's mode, ascending. */
  xs: readonly number[];
  steps: readonly number[];
  /** Unix seconds. */
  walls: readonly number[];
  values: readonly number[];
  smoothed: readonly number[];
  /** The run's first wall time: the origin of relative time. */
  t0: number;
}

export interface ReadoutRow {
  id: string;
  label: string;
  color: string;
  step: number;
  /** `0.4132 (0.4410)`: smoothed (raw). */
  text: string;
}

export interface Readout {
  /** The x the crosshair snaps to (the nearest point's). */
  x: number;
  step: number;
  /** Seconds since the run's start. */
  relative: number;
  /** Unix seconds. */
  wall: number;
  /** `step 1,200 · 4m 05s · 14:03:27`. */
  title: string;
  rows: ReadoutRow[];
}

/** The index of the x in `xs` (ascending) nearest to `x`; -1 for an empty series. */
export function nearestIndex(xs: readonly number[], x: number): number {
  if (!xs.length) return -1;
  let lo = 0;
  let hi = xs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(xs[lo - 1] - x) <= Math.abs(xs[lo] - x) ? lo - 1 : lo;
}

/** The readout at `x`, or null when no run has a point. */
export function readout(
  inputs: readonly ReadoutInput[],
  x: number,
  smoothing: boolean,
): Readout | null {
  let title: Readout | null = null;
  let closest = Infinity;
  const rows: ReadoutRow[] = [];
  for (const s of inputs) {
    const i = nearestIndex(s.xs, x);
    if (i < 0) continue;
    const raw = fmtMetric(s.values[i]);
    rows.push({
      id: s.id,
      label: s.label,
      color: s.color,
      step: s.steps[i],
      text: smoothing ? `${fmtMetric(s.smoothed[i])} (${raw})` : raw,
    });
    const d = Math.abs(s.xs[i] - x);
    if (d < closest) {
      closest = d;
      const relative = s.walls[i] - s.t0;
      title = {
        x: s.xs[i],
        step: s.steps[i],
        relative,
        wall: s.walls[i],
        title: `step ${fmtInt(s.steps[i])} · ${formatRelative(relative)} · ${
          formatClock(s.walls[i] * 1000)
        }`,
        rows,
      };
    }
  }
  return title;
}
