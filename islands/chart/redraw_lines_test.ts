import { assert, assertEquals } from "../../tests/assert.ts";
import { buildDatasets, type DrawnRun } from "./datasets.ts";
import { extentOf, linesInside, sameDatasets } from "./redraw_lines.ts";
import { type PointSeries, shapeFrame, shapeSeries } from "./series.ts";

const series = (values: number[]): PointSeries => ({
  runId: "r1",
  key: "loss",
  steps: values.map((_, i) => i),
  walls: values.map((_, i) => 1000 + i),
  values,
  min: null,
  max: null,
  total: values.length,
  downsampled: false,
});

const drawn = (
  s: PointSeries,
  smooth: number,
  frame = shapeFrame(s, {
    x: "step",
    smooth,
    t0: 0,
    log: false,
  }),
): DrawnRun => ({
  id: s.runId,
  color: "#336699",
  shaped: shapeSeries(s, { x: "step", smooth, t0: 0, log: false }, frame),
  emphasis: "normal",
});

Deno.test("extentOf skips gaps and non-finite values", () => {
  assertEquals(extentOf([{ data: [{ x: 0, y: null }, { x: 1, y: 2 }, { x: 2, y: -1 }] }]), {
    min: -1,
    max: 2,
  });
  assertEquals(extentOf([{ data: [{ x: 0, y: null }] }]), null);
});

Deno.test("a smoothed line stays within its raw line; a line drawn alone is not inside", () => {
  const s = series([3, 1, 4, 1, 5, 9, 2, 6, NaN, 5, 3]);
  assert(linesInside(buildDatasets([drawn(s, 0.9)], "red")));
  // Smoothing off: no raw line, nothing else spans the line.
  assert(!linesInside(buildDatasets([drawn(s, 0)], "red")));
});

Deno.test("sameDatasets: a new weight over the same frame is the same datasets; a new colour is not", () => {
  const s = series([3, 1, 4, 1, 5, 9, 2, 6]);
  const frame = shapeFrame(s, { x: "step", smooth: 1, t0: 0, log: false });
  const a = buildDatasets([drawn(s, 0.6, frame)], "red");
  const b = buildDatasets([drawn(s, 0.9, frame)], "red");
  assert(sameDatasets(a, b));
  assert(!sameDatasets(a, buildDatasets([{ ...drawn(s, 0.9, frame), color: "#000000" }], "red")));
  assert(!sameDatasets(a, buildDatasets([drawn(s, 0.9)], "red")), "another frame's arrays");
  assert(!sameDatasets(a, a.slice(1)));
});
