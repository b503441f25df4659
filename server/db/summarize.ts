/**
 * The reduction behind block summaries (see `metric_summaries.ts`): of every `bucket`
 * consecutive points, the one with the lowest and the one with the highest finite value, and
 * the first NaN, +Infinity and -Infinity; with the first and last point of what is reduced.
 * What is kept is a subsequence of the points (exact steps, values and wall times), so every
 * extreme of the series, and every run of NaN/Inf to within a bucket, survives a downsampling
 * of the summary. Each block has two summaries: per 32 points and per 256.
 */
import type { ColumnsBuilder, SeriesColumns } from "./metric_blocks.ts";

/** Points per summary bucket: a summary keeps at most 2 of them (plus NaN/Inf markers). */
export const SUMMARY_BUCKET = 32;

/** A block's summaries, the coarsest first: the bucket size, and the table that holds them. */
export const SUMMARY_LEVELS = [
  { bucket: 256, table: "metric_summaries_coarse" },
  { bucket: SUMMARY_BUCKET, table: "metric_summaries" },
] as const;

export type SummaryLevel = typeof SUMMARY_LEVELS[number];

/**
 * Appends to `out` the points of `src` in `[from, to)` that a chart needs (see the module
 * comment), in order, each once.
 */
export function summarizeInto(
  src: SeriesColumns,
  from: number,
  to: number,
  out: ColumnsBuilder,
  bucket: number = SUMMARY_BUCKET,
): void {
  if (to <= from) return;
  const { values } = src;
  // At most 5 points a bucket (low, high, NaN, +Inf, -Inf), and the first and last point.
  out.reserve(Math.ceil((to - from) / bucket) * 5 + 2);
  const keep = [0, 0, 0, 0, 0, 0, 0];
  for (let a = from; a < to; a += bucket) {
    const b = Math.min(a + bucket, to);
    let lo = -1;
    let hi = -1;
    let nan = -1;
    let posInf = -1;
    let negInf = -1;
    for (let i = a; i < b; i++) {
      const v = values[i];
      if (v - v === 0) { // finite
        if (lo < 0 || v < values[lo]) lo = i;
        if (hi < 0 || v > values[hi]) hi = i;
      } else if (v !== v) {
        if (nan < 0) nan = i;
      } else if (v > 0) {
        if (posInf < 0) posInf = i;
      } else if (negInf < 0) negInf = i;
    }
    let n = 0;
    if (a === from) keep[n++] = from;
    if (b === to) keep[n++] = to - 1;
    if (lo >= 0) keep[n++] = lo;
    if (hi >= 0) keep[n++] = hi;
    if (nan >= 0) keep[n++] = nan;
    if (posInf >= 0) keep[n++] = posInf;
    if (negInf >= 0) keep[n++] = negInf;
    // Insertion sort of at most 7 indices, then each once.
    for (let i = 1; i < n; i++) {
      const x = keep[i];
      let j = i - 1;
      for (; j >= 0 && keep[j] > x; j--) keep[j + 1] = keep[j];
      keep[j + 1] = x;
    }
    for (let k = 0; k < n; k++) {
      const i = keep[k];
      if (k > 0 && keep[k - 1] === i) continue;
      const at = out.length++;
      out.steps[at] = src.steps[i];
      out.values[at] = values[i];
      out.wallTimes[at] = src.wallTimes[i];
    }
  }
}
