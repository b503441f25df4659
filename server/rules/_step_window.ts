/** One value at one step. */
export interface StepValue {
  step: number;
  value: number;
}

/**
 * The most recent `capacity` steps of one series, sorted by step. A write to a step already
 * held replaces its value (the store keeps the newest write per step), so repeated points
 * are never counted twice.
 */
export interface StepWindow {
  readonly capacity: number;
  points: StepValue[];
}

/** An empty window holding at most `capacity` steps. */
export function createStepWindow(capacity: number): StepWindow {
  return { capacity, points: [] };
}

/** Index of the first point whose step is ≥ `step`. */
function lowerBound(points: readonly StepValue[], step: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid].step < step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Writes `value` at `step`. Returns "replaced" for a step already held, "inserted" for a new
 * one, and "dropped" for a step older than everything a full window holds.
 */
export function upsertStep(
  win: StepWindow,
  step: number,
  value: number,
): "inserted" | "replaced" | "dropped" {
  const points = win.points;
  const i = lowerBound(points, step);
  if (i < points.length && points[i].step === step) {
    points[i] = { step, value };
    return "replaced";
  }
  if (i === 0 && points.length >= win.capacity) return "dropped";
  points.splice(i, 0, { step, value });
  if (points.length > win.capacity) points.shift();
  return "inserted";
}

/** The values of the points strictly before `step`, oldest first. */
export function valuesBefore(win: StepWindow, step: number): number[] {
  const end = lowerBound(win.points, step);
  return win.points.slice(0, end).map((p) => p.value);
}

/** The point with the highest step ≤ `step`, if the window holds one. */
export function atOrBefore(win: StepWindow, step: number): StepValue | undefined {
  const points = win.points;
  const i = lowerBound(points, step);
  if (i < points.length && points[i].step === step) return points[i];
  return i > 0 ? points[i - 1] : undefined;
}

/** The highest step held, or -Infinity when empty. */
export function lastStep(win: StepWindow): number {
  return win.points.length === 0 ? -Infinity : win.points[win.points.length - 1].step;
}

/** The median of `values` (which must not be empty). */
export function median(values: readonly number[]): number {
  // A typed array sorts by value without calling a comparator (the rules run per point).
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
