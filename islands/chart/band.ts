/**
 * A run's band of bucket extremes, filled straight onto the canvas behind every line: a
 * chart.js plugin instead of two datasets filled by Filler, so a band costs no chart.js
 * element per point (a workspace's first screen draws tens of thousands fewer). It reads the
 * chart's own scales, so it follows a zoom and a log scale as the lines do, and it widens the
 * y axis to hold the band as the band's datasets used to.
 *
 * @module
 */
import type { Chart, Plugin, Scale } from "chart.js";
import type { XY } from "./series.ts";

/** Both edges at the same xs, with the same gaps (`shapeFrame`'s band). */
export interface Band {
  lo: XY[];
  hi: XY[];
}

/** What the plugin reads of a dataset (`PanelDataset`'s band fields). */
interface WithBand {
  band?: Band | null;
  bandColor?: string;
}

/**
 * The band's outline in pixels, one polygon (flat `[x0, y0, x1, y1, …]`) per stretch without
 * a gap: along the upper edge left to right, then back along the lower one. A stretch of one
 * point encloses nothing and is left out. Pure.
 */
export function bandPolygons(
  band: Band,
  px: (x: number) => number,
  py: (y: number) => number,
): number[][] {
  const { lo, hi } = band;
  const n = Math.min(lo.length, hi.length);
  const out: number[][] = [];
  let i = 0;
  while (i < n) {
    if (lo[i].y === null || hi[i].y === null) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < n && lo[j + 1].y !== null && hi[j + 1].y !== null) j++;
    if (j > i) {
      const poly: number[] = [];
      for (let k = i; k <= j; k++) poly.push(px(hi[k].x), py(hi[k].y!));
      for (let k = j; k >= i; k--) poly.push(px(lo[k].x), py(lo[k].y!));
      out.push(poly);
    }
    i = j + 1;
  }
  return out;
}

/** The lowest low and highest high of `bands` (null when none has a drawable point). Pure. */
export function bandExtent(
  bands: readonly (Band | null | undefined)[],
): { min: number; max: number } | null {
  let min = Infinity;
  let max = -Infinity;
  for (const b of bands) {
    if (!b) continue;
    for (const p of b.lo) if (p.y !== null && p.y < min) min = p.y;
    for (const p of b.hi) if (p.y !== null && p.y > max) max = p.y;
  }
  return min <= max ? { min, max } : null;
}

const bandsOf = (chart: Chart) => {
  const out: { i: number; band: Band; color: string }[] = [];
  chart.data.datasets.forEach((d, i) => {
    const { band, bandColor } = d as unknown as WithBand;
    if (band && chart.isDatasetVisible(i)) out.push({ i, band, color: bandColor ?? "" });
  });
  return out;
};

/** The plugin a panel's chart is made with (`plugins: [bandPlugin]`). */
export const bandPlugin: Plugin<"line"> = {
  id: "band",
  // The y axis holds the bands, unless the view fixed its range (a zoom).
  afterDataLimits(chart, { scale }: { scale: Scale }) {
    if (scale.axis !== "y") return;
    const e = bandExtent(bandsOf(chart as unknown as Chart).map((b) => b.band));
    if (!e) return;
    if (scale.options.min === undefined && e.min < scale.min) scale.min = e.min;
    if (scale.options.max === undefined && e.max > scale.max) scale.max = e.max;
  },
  // Before any dataset: the bands lie behind every line, clipped to the chart area.
  beforeDatasetsDraw(chart) {
    const bands = bandsOf(chart as unknown as Chart);
    if (!bands.length) return;
    const { ctx, chartArea: a } = chart;
    ctx.save();
    ctx.beginPath();
    ctx.rect(a.left, a.top, a.right - a.left, a.bottom - a.top);
    ctx.clip();
    for (const { i, band, color } of bands) {
      const meta = chart.getDatasetMeta(i);
      const x = chart.scales[meta.xAxisID!];
      const y = chart.scales[meta.yAxisID!];
      ctx.fillStyle = color;
      ctx.beginPath();
      const px = (v: number) => x.getPixelForValue(v);
      const py = (v: number) => y.getPixelForValue(v);
      for (const poly of bandPolygons(band, px, py)) {
        ctx.moveTo(poly[0], poly[1]);
        for (let k = 2; k < poly.length; k += 2) ctx.lineTo(poly[k], poly[k + 1]);
        ctx.closePath();
      }
      ctx.fill();
    }
    ctx.restore();
  },
};
