import { assertEquals } from "../../tests/assert.ts";
import { formatRelative, queryRange, xAt, xValues } from "./x_axis.ts";

const s = { steps: [0, 10, 20], wall_times: [1000, 1002, 1005.5] };

Deno.test("xValues() gives steps, seconds since the first point, or wall milliseconds", () => {
  assertEquals(xValues(s, "step"), [0, 10, 20]);
  assertEquals(xValues(s, "relative"), [0, 2, 5.5]);
  assertEquals(xValues(s, "wall"), [1_000_000, 1_002_000, 1_005_500]);
});

Deno.test("xAt() places one point the way xValues() places a whole series", () => {
  assertEquals([xAt(10, 1002, "step", 1000), xAt(10, 1002, "relative", 1000)], [10, 2]);
  assertEquals(xAt(10, 1002, "wall", 1000), 1_002_000);
});

Deno.test("queryRange() asks for steps, or for wall seconds when the axis is time", () => {
  assertEquals(queryRange("step", [10.4, 19.2], 0), { x: "step", range: [10, 20] });
  assertEquals(queryRange("step", [20, 10], 0), { x: "step", range: [10, 20] });
  assertEquals(queryRange("wall", [1_002_000, 1_004_000], 0), { x: "wall", range: [1002, 1004] });
  // Relative seconds are converted back to wall time from the run's own start.
  assertEquals(queryRange("relative", [2, 4], 1000), { x: "wall", range: [1002, 1004] });
});

Deno.test("formatRelative() writes seconds, minutes and hours", () => {
  assertEquals([formatRelative(9.5), formatRelative(65), formatRelative(3725)], [
    "9.5s",
    "1m 05s",
    "1h 02m 05s",
  ]);
});
