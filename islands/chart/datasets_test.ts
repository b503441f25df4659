import { assert, assertEquals } from "../../tests/assert.ts";
import { buildDatasets, type DrawnRun, withAlpha } from "./datasets.ts";
import { fromApi, shapeSeries } from "./series.ts";

Deno.test("withAlpha() fades the colour forms the console uses", () => {
  assertEquals(withAlpha("hsl(120 65% 48%)", 0.3), "hsl(120 65% 48% / 0.3)");
  assertEquals(withAlpha("#ff8000", 0.5), "rgba(255, 128, 0, 0.5)");
  assertEquals(withAlpha("rgb(1, 2, 3)", 0.5), "rgba(1, 2, 3, 0.5)");
});

const series = fromApi({
  run_id: "a",
  key: "loss",
  steps: [0, 1, 2],
  values: [1, "NaN", 0.5],
  wall_times: [0, 1, 2],
  min: [1, "NaN", 0.2],
  max: [1, "NaN", 0.9],
  total_points: 300,
  downsampled: true,
});
const drawn = (smooth: number, emphasis: DrawnRun["emphasis"] = "normal"): DrawnRun => ({
  id: "a",
  color: "hsl(10 65% 48%)",
  shaped: shapeSeries(series, { x: "step", smooth, t0: 0, log: false }),
  emphasis,
});

Deno.test("buildDatasets() draws raw (with smoothing), line with its band and NaN markers per run", () => {
  assertEquals(buildDatasets([drawn(0)], "red").map((d) => d.role), ["line", "marks"]);
  const run = drawn(0.6);
  const on = buildDatasets([run], "red");
  assertEquals(on.map((d) => d.role), ["raw", "line", "marks"]);
  assertEquals(on[0].borderColor, "hsl(10 65% 48% / 0.3)", "the raw line is faded");
  // The band rides on the line (no dataset, no chart.js element per point), faint.
  assert(on[1].band === run.shaped.band && on[1].band !== null, "the frame's band");
  assertEquals(on[1].bandColor, "hsl(10 65% 48% / 0.12)");
  assertEquals([on[0].band, on[2].band], [null, null]);
  const faded = buildDatasets([drawn(0.6, "faded")], "red")[1];
  assertEquals(faded.bandColor, "hsl(10 65% 48% / 0.03)", "faded with its run");
});

Deno.test("buildDatasets() brings a hovered run forward and fades the others", () => {
  const front = buildDatasets([drawn(0, "front")], "red").find((d) => d.role === "line")!;
  const faded = buildDatasets([drawn(0, "faded")], "red").find((d) => d.role === "line")!;
  assertEquals([front.order < faded.order, front.borderWidth > faded.borderWidth], [true, true]);
  assertEquals(faded.borderColor, "hsl(10 65% 48% / 0.25)");
});

Deno.test("buildDatasets() shows the point of a series that has only one", () => {
  const one = fromApi({
    run_id: "a",
    key: "sys/cpu_pct",
    steps: [0],
    values: [98],
    wall_times: [0],
    total_points: 1,
    downsampled: false,
  });
  const shaped = shapeSeries(one, { x: "step", smooth: 0, t0: 0, log: false });
  const [ds] = buildDatasets([{ id: "a", color: "red", shaped, emphasis: "normal" }], "red");
  assertEquals(ds.pointRadius, 3);
  assertEquals(buildDatasets([drawn(0)], "red").find((d) => d.role === "line")!.pointRadius, 0);
});
