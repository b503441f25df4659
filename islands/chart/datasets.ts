/**
 * The chart.js datasets of a panel: per visible run, its raw line (faded, under the smoothed
 * one while smoothing is on), its line with its band of bucket extremes (faint, filled by
 * `band.ts` behind every line), and its NaN/±Inf markers. Colours stay apart from points: a
 * run's own colour, faded for everything but its line, and faded further while another run is
 * hovered. Each dataset names its run and role, so the chart can be read back (tests, the
 * readout). Pure.
 *
 * @module
 */
import type { Band } from "./band.ts";
import type { ShapedSeries, XY } from "./series.ts";

export type Role = "raw" | "line" | "marks";

/** One chart.js line dataset, as plain data. */
export interface PanelDataset {
  runId: string;
  role: Role;
  data: XY[];
  borderColor: string;
  backgroundColor: string;
  borderWidth: number;
  pointRadius: number;
  pointHoverRadius: number;
  pointHitRadius: number;
  pointStyle?: string;
  showLine: boolean;
  spanGaps: boolean;
  /** chart.js draws a lower order on top. */
  order: number;
  /** A line's band of bucket extremes, drawn by `band.ts` (not a dataset: no elements). */
  band: Band | null;
  /** The band's fill. */
  bandColor: string;
}

/** A run as the panel draws it. */
export interface DrawnRun {
  id: string;
  color: string;
  shaped: ShapedSeries;
  emphasis: "normal" | "front" | "faded";
}

/** `color` (`hsl(…)`, `#rrggbb`, `rgb(…)`) at opacity `alpha`. */
export function withAlpha(color: string, alpha: number): string {
  const c = color.trim();
  const fn = /^(hsl|rgb)a?\(([^)]*)\)$/.exec(c);
  if (fn) {
    const inner = fn[2].split("/")[0].trim();
    return inner.includes(",") ? `${fn[1]}a(${inner}, ${alpha})` : `${fn[1]}(${inner} / ${alpha})`;
  }
  const hex = /^#([0-9a-f]{6})$/i.exec(c);
  if (hex) {
    const n = parseInt(hex[1], 16);
    return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  }
  return c;
}

const line = (
  runId: string,
  role: Role,
  data: XY[],
  color: string,
  o: Partial<PanelDataset> = {},
): PanelDataset => ({
  runId,
  role,
  data,
  borderColor: color,
  backgroundColor: color,
  borderWidth: 1.5,
  pointRadius: 0,
  pointHoverRadius: 0,
  pointHitRadius: 0,
  showLine: true,
  spanGaps: false,
  order: 2,
  band: null,
  bandColor: "",
  ...o,
});

/** The points of `line` that are drawn (not gaps), counting up to `upTo`. */
export function drawnCount(line: readonly XY[], upTo = Infinity): number {
  let n = 0;
  for (let i = 0; i < line.length && n < upTo; i++) if (line[i].y !== null) n++;
  return n;
}

/** The datasets of `runs`, each run's side by side. */
export function buildDatasets(runs: readonly DrawnRun[], failedColor: string): PanelDataset[] {
  const out: PanelDataset[] = [];
  for (const r of runs) {
    const fade = r.emphasis === "faded" ? 0.25 : 1;
    const front = r.emphasis === "front";
    const strong = withAlpha(r.color, fade);
    if (r.shaped.raw) {
      out.push(
        line(r.id, "raw", r.shaped.raw, withAlpha(r.color, 0.3 * fade), {
          borderWidth: 1,
          order: 4,
        }),
      );
    }
    // A line of one point draws nothing: such a series shows its point.
    const lone = drawnCount(r.shaped.line, 2) < 2;
    out.push(line(r.id, "line", r.shaped.line, strong, {
      borderWidth: front ? 2.5 : 1.5,
      pointRadius: lone ? 3 : 0,
      order: front ? 1 : 2,
      band: r.shaped.band,
      bandColor: withAlpha(r.color, 0.12 * fade),
    }));
    if (r.shaped.marks.length) {
      out.push(line(r.id, "marks", r.shaped.marks, withAlpha(failedColor, fade), {
        showLine: false,
        pointRadius: 4,
        pointHoverRadius: 4,
        pointStyle: "crossRot",
        borderWidth: 2,
        order: 0,
      }));
    }
  }
  return out;
}
