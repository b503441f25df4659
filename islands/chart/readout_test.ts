import { assertEquals } from "../../tests/assert.ts";
import { nearestIndex, readout, type ReadoutInput } from "./readout.ts";
import { formatClock } from "./x_axis.ts";

Deno.test("nearestIndex() finds the closest x, the earlier one on a tie", () => {
  const xs = [0, 10, 20, 30];
  assertEquals([0, 4, 5, 6, 29, 99, -5].map((x) => nearestIndex(xs, x)), [0, 0, 0, 1, 3, 3, 0]);
  assertEquals(nearestIndex([], 3), -1);
});

const run = (id: string, xs: number[], values: number[], smoothed: number[]): ReadoutInput => ({
  id,
  label: `run ${id}`,
  color: "red",
  xs,
  steps: xs,
  walls: xs.map((x) => 1000 + x / 10),
  values,
  smoothed,
  t0: 1000,
});

Deno.test("readout() gives each run's smoothed value with the raw one in brackets", () => {
  const r = readout(
    [
      run("a", [0, 10, 20], [0.5, 0.441, 0.3], [0.5, 0.41318, 0.35]),
      run("b", [0, 12, 24], [1, 2, NaN], [1, 1.5, NaN]),
    ],
    11,
    true,
  )!;
  assertEquals(r.rows.map((row) => [row.id, row.step, row.text]), [
    ["a", 10, "0.4132 (0.441)"],
    ["b", 12, "1.5 (2)"],
  ]);
  // The title is the point nearest of all: run a's step 10, one second into the run.
  assertEquals([r.x, r.step, r.relative, r.wall], [10, 10, 1, 1001]);
  assertEquals(r.title, `step 10 · 1s · ${formatClock(1_001_000)}`);
});

Deno.test("readout() names non-finite values and shows one value with smoothing off", () => {
  const r = readout([run("b", [0, 12, 24], [1, 2, NaN], [1, 2, NaN])], 30, false)!;
  assertEquals(r.rows[0].text, "NaN");
  assertEquals(readout([run("c", [], [], [])], 3, true), null);
});
