import { assertEquals } from "../../tests/assert.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { ColumnsBuilder } from "./metric_blocks.ts";
import { summarizeInto, SUMMARY_BUCKET } from "./summarize.ts";

Deno.test("summarizeInto() keeps each bucket's lowest and highest value, its first NaN and ±Infinity, and both ends", () => {
  const values = [5, 1, 9, NaN, NaN, Infinity, 3, -Infinity, 4, 4];
  const n = SUMMARY_BUCKET + values.length;
  const src = {
    steps: Float64Array.from({ length: n }, (_, i) => 10 * i),
    values: Float64Array.from({ length: n }, (_, i) => i < SUMMARY_BUCKET ? 2 : values[i - 32]),
    wallTimes: Float64Array.from({ length: n }, (_, i) => 1000 + i),
    length: n,
  };
  src.values[7] = 0; // the first bucket's lowest; its highest is its first 2
  src.values[20] = 8;
  const out = new ColumnsBuilder(0);
  summarizeInto(src, 0, n, out);
  const kept = Array.from(out.steps.subarray(0, out.length), (s) => s / 10);
  // Bucket 1: the first point (also its highest until 20), 7 (lowest), 20 (highest), and its
  // last point is not kept (not an end of what is reduced). Bucket 2: 33 (lowest finite 1),
  // 34 (highest 9), 35 (first NaN), 37 (+Inf), 39 (-Inf), and the last point 41.
  assertEquals(kept, [0, 7, 20, 33, 34, 35, 37, 39, 41]);
  assertEquals(
    Array.from(out.values.subarray(0, out.length), encodeMetricValue),
    [2, 0, 8, 1, 9, "NaN", "Infinity", "-Infinity", 4],
  );
  assertEquals(out.wallTimes[3], 1033);
});
