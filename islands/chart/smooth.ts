/**
 * TensorBoard's smoothing: a debiased exponential moving average. `weight` 0 is the raw
 * series, 0.999 nearly flat. Debiasing divides by `1 - weight^n` so the first points are not
 * pulled towards 0; NaN and ±Infinity points stay as they are and do not enter the average;
 * a constant series is left as it is (no rounding drift). Pure, for the chart panel.
 *
 * @module
 */

/** The smoothed values of `values` (same length). */
export function smooth(values: readonly number[], weight: number): number[] {
  if (weight <= 0 || values.length === 0) return values.slice();
  const w = Math.min(weight, 0.999);
  const first = values.find(Number.isFinite);
  if (first === undefined || values.every((v) => !Number.isFinite(v) || v === first)) {
    return values.slice();
  }
  let last = 0;
  /** weight^n for the n finite values so far, kept as a running product. */
  let wn = 1;
  const out = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out[i] = v;
      continue;
    }
    last = last * w + (1 - w) * v;
    wn *= w;
    out[i] = last / (1 - wn);
  }
  return out;
}
