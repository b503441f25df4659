/**
 * A smoothing change drawn without chart.js laying the chart out again. The weight changes
 * only the values of each run's line: its x, the faded raw line, the band and the marks stay,
 * and while the raw line is drawn it holds every finite value's extremes, so the y range the
 * chart fits is the same. The line's points are then moved where chart.js's own update would
 * put them (the same scale, the same gaps) and the chart drawn again; anything else (a new
 * range, other datasets, a zoom or log scale) takes the full update.
 *
 * @module
 */
import type { Chart } from "chart.js";
import type { PanelDataset } from "./datasets.ts";
import type { XY } from "./series.ts";

/** The lowest and highest drawable y of `pts` (null when none is). */
export function extentOf(
  sets: readonly { data: readonly XY[] }[],
): { min: number; max: number } | null {
  let min = Infinity;
  let max = -Infinity;
  for (const s of sets) {
    for (const p of s.data) {
      const y = p.y;
      if (y === null || !Number.isFinite(y)) continue;
      if (y < min) min = y;
      if (y > max) max = y;
    }
  }
  return min <= max ? { min, max } : null;
}

/**
 * Whether the lines lie within what the other datasets span, so the y range chart.js fits to
 * all of them is the one the other datasets alone give.
 */
export function linesInside(datasets: readonly PanelDataset[]): boolean {
  const lines = extentOf(datasets.filter((d) => d.role === "line"));
  if (!lines) return true;
  const rest = extentOf(datasets.filter((d) => d.role !== "line"));
  return !!rest && lines.min >= rest.min && lines.max <= rest.max;
}

/** Whether `a` and `b` are the same datasets, drawn alike: the same options and data arrays. */
export function sameDatasets(a: readonly PanelDataset[], b: readonly PanelDataset[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as unknown as Record<string, unknown>;
    const y = b[i] as unknown as Record<string, unknown>;
    for (const k of Object.keys(y)) if (x[k] !== y[k]) return false;
  }
  return true;
}

/**
 * Moves each "line" dataset's points to their values' pixels, as chart.js's update does, and
 * draws the chart; the scales and every other dataset stay as last laid out.
 */
export function redrawLines(ch: Chart<"line", XY[]>): void {
  const datasets = ch.data.datasets as unknown as PanelDataset[];
  for (let i = 0; i < datasets.length; i++) {
    if (datasets[i].role !== "line") continue;
    const meta = ch.getDatasetMeta(i);
    const y = ch.scales[meta.yAxisID!];
    const base = y.getBasePixel();
    const data = datasets[i].data;
    const points = meta.data as unknown as { x: number; y: number; skip: boolean }[];
    const n = Math.min(points.length, data.length);
    for (let j = 0; j < n; j++) {
      const v = data[j].y;
      const el = points[j];
      if (v === null || v === undefined) {
        el.y = base;
        el.skip = true;
      } else {
        const px = y.getPixelForValue(v, j);
        el.y = px;
        el.skip = isNaN(el.x) || isNaN(px);
      }
    }
    // The line's path and its segments (the gaps) are made again from the moved points.
    (meta.dataset as unknown as { points: unknown }).points = meta.data;
  }
  ch.render();
}
