import { assertEquals } from "../../tests/assert.ts";
import { smooth } from "./smooth.ts";

const round = (xs: number[]) => xs.map((x) => Number.isFinite(x) ? Number(x.toFixed(6)) : x);

Deno.test("smooth() with weight 0 is the raw series", () => {
  assertEquals(smooth([3, 1, 2], 0), [3, 1, 2]);
});

Deno.test("smooth() debiases the first points (TensorBoard's values, by hand)", () => {
  // w = 0.6: last1 = 0.4·1 = 0.4 → 0.4/0.4 = 1; last2 = 0.24 + 0.8 = 1.04 → 1.04/0.64 = 1.625;
  // last3 = 0.624 + 1.2 = 1.824 → 1.824/0.784 = 2.326531.
  assertEquals(round(smooth([1, 2, 3], 0.6)), [1, 1.625, 2.326531]);
});

Deno.test("smooth() keeps NaN and infinite points as gaps without letting them into the average", () => {
  // The NaN is kept; the next point continues from the first: last2 = 0.24 + 0.8·... as if absent.
  assertEquals(round(smooth([1, NaN, 2, Infinity, 3], 0.6)), [1, NaN, 1.625, Infinity, 2.326531]);
});

Deno.test("smooth() leaves a constant series exactly as it is", () => {
  assertEquals(smooth([0.1, 0.1, 0.1, NaN, 0.1], 0.9), [0.1, 0.1, 0.1, NaN, 0.1]);
});
