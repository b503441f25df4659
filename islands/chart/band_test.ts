import { assertEquals } from "../../tests/assert.ts";
import { bandExtent, bandPlugin, bandPolygons } from "./band.ts";
import { fromApi, shapeSeries, type XY } from "./series.ts";

const pts = (ys: (number | null)[]): XY[] => ys.map((y, x) => ({ x, y }));
/** x → 10x, y → 100 - y: a linear chart area 100 px high. */
const linear = { px: (x: number) => 10 * x, py: (y: number) => 100 - y };

Deno.test("bandPolygons() outlines the upper edge forward, then the lower edge back", () => {
  const band = { lo: pts([1, 2, 3]), hi: pts([5, 6, 7]) };
  assertEquals(bandPolygons(band, linear.px, linear.py), [
    [0, 95, 10, 94, 20, 93, 20, 97, 10, 98, 0, 99],
  ]);
});

Deno.test("bandPolygons() splits the band at a gap and leaves out a lone point", () => {
  // Points 0–1 | gap | 3 alone | gap | 5–6.
  const band = {
    lo: pts([1, 1, null, 2, null, 3, 3]),
    hi: pts([4, 4, null, 5, null, 6, 6]),
  };
  const polys = bandPolygons(band, linear.px, linear.py);
  assertEquals(polys.length, 2);
  assertEquals(polys[0], [0, 96, 10, 96, 10, 99, 0, 99]);
  assertEquals(polys[1], [50, 94, 60, 94, 60, 97, 50, 97]);
});

Deno.test("bandPolygons() follows the scale it is given: a zoom, a log axis", () => {
  const band = { lo: pts([1, 10]), hi: pts([10, 100]) };
  // Zoomed to x 0.5 … 1 over 100 px: x 0 lies left of the area (clipped when drawn).
  const zoomX = (x: number) => (x - 0.5) * 200;
  // Log y over 100 px: 1 at the bottom, 100 at the top.
  const logY = (y: number) => 100 - 50 * Math.log10(y);
  assertEquals(bandPolygons(band, zoomX, logY), [[-100, 50, 100, 0, 100, 50, -100, 100]]);
});

Deno.test("a shaped series' band draws every bucket's extremes, a NaN bucket as a gap", () => {
  const s = shapeSeries(
    fromApi({
      run_id: "a",
      key: "loss",
      steps: [0, 1, 2, 3],
      values: [4, "NaN", 2, 1],
      wall_times: [0, 1, 2, 3],
      min: [3, "NaN", 1.5, 0.5],
      max: [5, "NaN", 2.5, 9],
      total_points: 400,
      downsampled: true,
    }),
    { x: "step", smooth: 0, t0: 0, log: false },
  );
  assertEquals(bandPolygons(s.band!, (x) => x, (y) => y), [[2, 2.5, 3, 9, 3, 0.5, 2, 1.5]]);
  assertEquals(bandExtent([s.band, null]), { min: 0.5, max: 9 });
  assertEquals(bandExtent([{ lo: pts([null]), hi: pts([null]) }]), null);
});

/** A canvas context that records what is filled. */
function recordingCtx() {
  const fills: { color: string; path: number[][] }[] = [];
  let path: number[][] = [];
  let clip: number[] = [];
  const ctx = {
    fillStyle: "",
    save() {},
    restore() {},
    beginPath: () => path = [],
    rect: (...r: number[]) => clip = r,
    clip() {},
    moveTo: (x: number, y: number) => path.push([x, y]),
    lineTo: (x: number, y: number) => path.at(-1)!.push(x, y),
    closePath() {},
    fill() {
      fills.push({ color: ctx.fillStyle, path });
    },
  };
  return { ctx, fills, clip: () => clip };
}

/** The parts of a chart the plugin reads. */
function fakeChart(datasets: unknown[], hidden: number[] = []) {
  const rec = recordingCtx();
  const scale = (f: (v: number) => number) => ({ getPixelForValue: f });
  const chart = {
    data: { datasets },
    ctx: rec.ctx,
    chartArea: { left: 10, top: 0, right: 110, bottom: 100 },
    scales: { x: scale(linear.px), y: scale(linear.py) },
    isDatasetVisible: (i: number) => !hidden.includes(i),
    getDatasetMeta: () => ({ xAxisID: "x", yAxisID: "y" }),
  };
  return { chart, ...rec };
}

type Hook = (chart: unknown, args: unknown, options: unknown) => void;

Deno.test("the band plugin fills each visible band in its colour, clipped to the chart area", () => {
  const band = { lo: pts([1, 2]), hi: pts([3, 4]) };
  const { chart, fills, clip } = fakeChart([
    { band, bandColor: "hsl(1 2% 3% / 0.12)" },
    { band: null },
    { band, bandColor: "hidden" },
  ], [2]);
  (bandPlugin.beforeDatasetsDraw as unknown as Hook)(chart, {}, {});
  assertEquals(fills, [{ color: "hsl(1 2% 3% / 0.12)", path: [[0, 97, 10, 96, 10, 98, 0, 99]] }]);
  assertEquals(clip(), [10, 0, 100, 100]);
});

Deno.test("the band plugin widens a free y axis to hold the bands, not a fixed one", () => {
  const band = { lo: pts([-2, 1]), hi: pts([3, 40]) };
  const y = (options: { min?: number; max?: number }) => ({
    axis: "y",
    options,
    min: 0,
    max: 10,
  });
  const { chart } = fakeChart([{ band, bandColor: "c" }]);
  const free = y({});
  (bandPlugin.afterDataLimits as unknown as Hook)(chart, { scale: free }, {});
  assertEquals([free.min, free.max], [-2, 40]);
  const zoomed = y({ min: 0, max: 10 });
  (bandPlugin.afterDataLimits as unknown as Hook)(chart, { scale: zoomed }, {});
  assertEquals([zoomed.min, zoomed.max], [0, 10]);
  const x = { ...y({}), axis: "x" };
  (bandPlugin.afterDataLimits as unknown as Hook)(chart, { scale: x }, {});
  assertEquals([x.min, x.max], [0, 10]);
});
