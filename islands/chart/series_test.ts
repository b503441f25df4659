import { assert, assertEquals } from "../../tests/assert.ts";
import {
  decodeValue,
  fromApi,
  latestAndBest,
  mergePoints,
  type PointSeries,
  replaceKeepingTail,
  shapeFrame,
  shapeSeries,
  yExtent,
} from "./series.ts";

const api = {
  run_id: "r1",
  key: "loss",
  steps: [0, 10, 20, 30],
  values: [4, "NaN", 2, 1] as (number | string)[],
  wall_times: [100, 101, 102, 103],
  total_points: 4,
  downsampled: false,
};
const base = fromApi(api);
const opts = { x: "step" as const, smooth: 0, t0: 100, log: false };

Deno.test("decodeValue() turns the API's strings back into NaN and infinities", () => {
  assertEquals(["NaN", "Infinity", "-Infinity", 1.5, "0.25"].map(decodeValue), [
    NaN,
    Infinity,
    -Infinity,
    1.5,
    0.25,
  ]);
});

Deno.test("shapeSeries() draws a NaN as a gap with a marker at its neighbour's height", () => {
  const s = shapeSeries(base, opts);
  assertEquals(s.line, [{ x: 0, y: 4 }, { x: 10, y: null }, { x: 20, y: 2 }, { x: 30, y: 1 }]);
  assertEquals(s.marks, [{ x: 10, y: 4 }]);
  assertEquals([s.raw, s.band], [null, null]);
});

Deno.test("shapeSeries() keeps the raw line under the smoothed one while smoothing is on", () => {
  const s = shapeSeries(base, { ...opts, smooth: 0.5 });
  assertEquals(s.raw!.map((p) => p.y), [4, null, 2, 1]);
  // Debiased EMA, w = 0.5, the NaN skipped: 2/0.5 = 4; (1 + 1)/0.75 = 2.6667; (1 + 0.5)/0.875.
  assertEquals(s.line.map((p) => p.y === null ? null : Number(p.y.toFixed(4))), [
    4,
    null,
    2.6667,
    1.7143,
  ]);
});

Deno.test("shapeSeries() places points by step, relative or wall time", () => {
  assertEquals(shapeSeries(base, { ...opts, x: "relative" }).xs, [0, 1, 2, 3]);
  assertEquals(shapeSeries(base, { ...opts, x: "wall" }).xs, [100_000, 101_000, 102_000, 103_000]);
  // A zoomed read keeps the run's own origin, not the first point it happened to read.
  assertEquals(shapeSeries(base, { ...opts, x: "relative", t0: 90 }).xs, [10, 11, 12, 13]);
});

Deno.test("shapeSeries() draws a downsampled series' bucket extremes as a band", () => {
  const s = shapeSeries(
    fromApi({ ...api, min: [3, "NaN", 1.5, 0.5], max: [5, "NaN", 2.5, 1] }),
    opts,
  );
  assertEquals(s.band!.lo.map((p) => p.y), [3, null, 1.5, 0.5]);
  assertEquals(s.band!.hi.map((p) => p.y), [5, null, 2.5, 1]);
});

/** 100 points, step i: a slow fall with a spike at step 37 and a NaN at step 62. */
const long = fromApi({
  run_id: "r2",
  key: "loss",
  steps: Array.from({ length: 100 }, (_, i) => i),
  values: Array.from({ length: 100 }, (_, i) => i === 37 ? 50 : i === 62 ? "NaN" : 10 - i / 10),
  wall_times: Array.from({ length: 100 }, (_, i) => 1000 + i),
  min: Array.from({ length: 100 }, (_, i) => i === 62 ? "NaN" : 9 - i / 10),
  max: Array.from({ length: 100 }, (_, i) => i === 81 ? 70 : i === 62 ? "NaN" : 11 - i / 10),
  total_points: 10_000,
  downsampled: true,
});

Deno.test("shapeSeries() reduces the faded raw line to each column's extremes, spikes and gaps kept", () => {
  const full = shapeSeries(long, { ...opts, smooth: 0.6 });
  const cut = shapeSeries(long, { ...opts, smooth: 0.6, columns: 10 });
  // The line and the readout's columns keep every point; only the faded raw line is cut.
  assertEquals(cut.line, full.line);
  assertEquals([cut.xs, cut.smoothed], [full.xs, full.smoothed]);
  assertEquals(full.raw!.length, 100);
  assert(cut.raw!.length <= 3 * 10 + 2, `${cut.raw!.length} points`);
  const ys = cut.raw!.map((p) => p.y);
  assertEquals(Math.max(...ys.filter((y) => y !== null) as number[]), 50, "the spike stays");
  assertEquals(cut.raw!.find((p) => p.y === 50)!.x, 37);
  assert(cut.raw!.some((p) => p.x === 62 && p.y === null), "the NaN stays a gap");
  assertEquals(cut.raw![0], { x: 0, y: 10 });
  assertEquals(cut.raw!.at(-1), { x: 99, y: 10 - 99 / 10 }, "it ends where the line ends");
  assert(cut.raw!.length <= 4 * 10);
  const xs = cut.raw!.map((p) => p.x);
  assertEquals(xs, [...xs].sort((a, b) => a - b), "in x order");
});

Deno.test("shapeSeries() reduces the band to each column's extremes over the same x span", () => {
  const cut = shapeSeries(long, { ...opts, columns: 10 });
  const { lo, hi } = cut.band!;
  assert(lo.length <= 30 && hi.length <= 30, `${lo.length}, ${hi.length} points`);
  const finite = (pts: { y: number | null }[]) => pts.flatMap((p) => p.y === null ? [] : [p.y]);
  assertEquals(Math.max(...finite(hi)), 70, "the highest bucket extreme stays");
  assertEquals(Math.min(...finite(lo)), 9 - 99 / 10);
  assertEquals([lo[0].x, lo.at(-1)!.x, hi[0].x, hi.at(-1)!.x], [0, 99, 0, 99]);
  // The column holding the NaN still shows its other points' extremes, then a gap.
  assert(hi.some((p) => p.y === null), "a gap where a bucket had no number");
  // Both edges at the same xs with the same gaps: the band fills between them point by point.
  assertEquals(lo.map((p) => p.x), hi.map((p) => p.x));
  assertEquals(lo.map((p) => p.y === null), hi.map((p) => p.y === null));
  // Fewer points than two a column: nothing to reduce.
  assertEquals(shapeSeries(base, { ...opts, columns: 10 }).line.length, 4);
});

Deno.test("shapeSeries() with a frame redraws only what the smoothing weight changes", () => {
  const o = { ...opts, smooth: 0.6, columns: 10 };
  const frame = shapeFrame(long, o);
  const a = shapeSeries(long, o, frame);
  const ys = a.line.map((p) => p.y);
  const b = shapeSeries(long, { ...o, smooth: 0.9 }, frame);
  assert(a.raw === b.raw && a.band === b.band && a.xs === b.xs, "the frame's arrays are kept");
  assert(a.line === b.line, "the line's points are written in place");
  assertEquals(b, shapeSeries(long, { ...o, smooth: 0.9 }));
  assert(b.line.some((p, i) => p.y !== ys[i]), "with the new weight's values");
});

Deno.test("shapeSeries() on a log scale leaves values ≤ 0 out and counts them", () => {
  const s = shapeSeries(fromApi({ ...api, values: [1, 0, -2, 10] }), { ...opts, log: true });
  assertEquals(s.line.map((p) => p.y), [1, null, null, 10]);
  assertEquals(s.hidden, 2);
});

Deno.test("mergePoints() appends new steps, replaces a step written again, inserts in order", () => {
  const m = mergePoints(base, [
    { step: 40, value: 0.5, wall_time: 104 },
    { step: 20, value: 1.8, wall_time: 105 },
    { step: 15, value: "Infinity", wall_time: 106 },
  ]);
  assertEquals(m.steps, [0, 10, 15, 20, 30, 40]);
  assertEquals(m.values, [4, NaN, Infinity, 1.8, 1, 0.5]);
  assertEquals(m.walls, [100, 101, 106, 105, 103, 104]);
  assertEquals(m.total, 6);
  assertEquals(base.steps, [0, 10, 20, 30], "the old series is left as it was");
});

Deno.test("mergePoints() widens a bucket's extremes to hold a rewritten point", () => {
  const d = fromApi({ ...api, min: [3, 1, 1.5, 0.5], max: [5, 9, 2.5, 1], downsampled: true });
  const m = mergePoints(d, [{ step: 30, value: 7, wall_time: 110 }]);
  assertEquals([m.min![3], m.max![3]], [0.5, 7]);
});

Deno.test("replaceKeepingTail() keeps live points newer than a fresh read's last step", () => {
  const live = mergePoints(base, [{ step: 40, value: 0.5, wall_time: 104 }]);
  const fresh: PointSeries = fromApi({
    ...api,
    steps: [0, 20, 30],
    values: [4, 2, 1.1],
    wall_times: [100, 102, 103],
  });
  const r = replaceKeepingTail(live, fresh);
  assertEquals(r.steps, [0, 20, 30, 40]);
  assertEquals(r.values, [4, 2, 1.1, 0.5]);
  assertEquals(replaceKeepingTail(undefined, fresh), fresh);
});

Deno.test("yExtent() fits the points inside an x range, bands included", () => {
  const s = shapeSeries(fromApi({ ...api, min: [3, 1, 1.5, 0.5], max: [5, 9, 2.5, 1] }), opts);
  assertEquals(yExtent([s], 15, 35), { min: 0.5, max: 2.5 });
  assertEquals(yExtent([s], 100, 200), null);
});

Deno.test("latestAndBest() reads the newest finite value and the best of the bucket extremes", () => {
  const d = fromApi({
    ...api,
    values: [4, 3, 2, "NaN"],
    min: [4, 0.5, 2, "NaN"],
    max: [4, 3, 2, "NaN"],
  });
  assertEquals(latestAndBest(d, "min"), {
    latest: { step: 20, value: 2, wall: 102 },
    best: { step: 10, value: 0.5 },
  });
  assertEquals(latestAndBest(d, "max").best, { step: 0, value: 4 });
  assertEquals(latestAndBest(d, null).best, null);
});
