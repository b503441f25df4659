/**
 * Largest-Triangle-Three-Buckets downsampling (Steinarsson 2013): keeps the points that
 * preserve a curve's visual shape, and reports each bucket's extremes so a chart can draw
 * the band that the kept point stands for.
 */

/** The kept points, as indices into the input, with the extremes of each kept point's bucket. */
export interface Downsampled {
  indices: number[];
  min: number[];
  max: number[];
}

/**
 * Picks at most `threshold` points of the series `(xs[i], ys[i])` (xs ascending, ys finite).
 * The first and last points are always kept. Below the threshold every point is kept.
 */
export function lttb(xs: ArrayLike<number>, ys: ArrayLike<number>, threshold: number): Downsampled {
  const n = xs.length;
  if (threshold >= n || threshold < 3) {
    const indices = Array.from({ length: n }, (_, i) => i);
    const vals = Array.from(ys);
    return { indices, min: vals, max: vals.slice() };
  }
  const indices: number[] = [0];
  const min: number[] = [ys[0]];
  const max: number[] = [ys[0]];
  // The middle n - 2 points are split into threshold - 2 buckets.
  const every = (n - 2) / (threshold - 2);
  let a = 0;
  for (let b = 0; b < threshold - 2; b++) {
    const start = Math.floor(b * every) + 1;
    const end = Math.min(Math.floor((b + 1) * every) + 1, n - 1);
    // The average of the next bucket is the third corner of the triangle.
    const nextStart = end;
    const nextEnd = Math.min(Math.floor((b + 2) * every) + 1, n);
    let avgX = 0;
    let avgY = 0;
    for (let i = nextStart; i < nextEnd; i++) {
      avgX += xs[i];
      avgY += ys[i];
    }
    const count = Math.max(nextEnd - nextStart, 1);
    avgX /= count;
    avgY /= count;
    const ax = xs[a];
    const ay = ys[a];
    let best = start;
    let bestArea = -1;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = start; i < end; i++) {
      const y = ys[i];
      if (y < lo) lo = y;
      if (y > hi) hi = y;
      const area = Math.abs((ax - avgX) * (y - ay) - (ax - xs[i]) * (avgY - ay));
      if (area > bestArea) {
        bestArea = area;
        best = i;
      }
    }
    indices.push(best);
    min.push(lo);
    max.push(hi);
    a = best;
  }
  indices.push(n - 1);
  min.push(ys[n - 1]);
  max.push(ys[n - 1]);
  return { indices, min, max };
}
