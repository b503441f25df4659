import { assert, assertEquals } from "../../tests/assert.ts";
import { lttb } from "./lttb.ts";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

Deno.test("lttb() keeps every point when the series is shorter than the threshold", () => {
  const r = lttb([0, 1, 2], [5, 6, 7], 10);
  assertEquals(r.indices, [0, 1, 2]);
  assertEquals(r.min, [5, 6, 7]);
});

Deno.test("lttb() returns exactly `threshold` points, first and last included, in order", () => {
  const xs = range(10_000);
  const ys = xs.map((x) => Math.sin(x / 100));
  const r = lttb(xs, ys, 500);
  assertEquals(r.indices.length, 500);
  assertEquals(r.indices[0], 0);
  assertEquals(r.indices[499], 9_999);
  for (let i = 1; i < r.indices.length; i++) assert(r.indices[i] > r.indices[i - 1]);
});

Deno.test("lttb() keeps a lone spike that uniform sampling would miss", () => {
  const xs = range(1000);
  const ys = xs.map((x) => (x === 537 ? 100 : 0));
  const r = lttb(xs, ys, 20);
  assert(r.indices.includes(537));
  // The spike's bucket reports it as its max even though min is 0.
  const k = r.indices.indexOf(537);
  assertEquals([r.min[k], r.max[k]], [0, 100]);
});

Deno.test("lttb() bucket extremes bound every dropped point", () => {
  const xs = range(5000);
  const ys = xs.map((x) => Math.cos(x / 7) * x);
  const r = lttb(xs, ys, 100);
  const globalMin = Math.min(...ys);
  const globalMax = Math.max(...ys);
  assertEquals(Math.min(...r.min), globalMin);
  assertEquals(Math.max(...r.max), globalMax);
});
