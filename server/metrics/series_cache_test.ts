import { assertEquals } from "../../tests/assert.ts";
import { SeriesCache } from "./series_cache.ts";

const pt = (step: number, value: number) => ({
  key: "loss",
  step,
  value,
  wall_time: step,
  seq: step,
});
const series = (n: number) => ({
  steps: Float64Array.from({ length: n }, (_, i) => i),
  values: Float64Array.from({ length: n }, (_, i) => i * 10),
  wallTimes: Float64Array.from({ length: n }, (_, i) => i),
  length: n,
});

Deno.test("SeriesCache reads a series once and serves it from memory after", () => {
  const cache = new SeriesCache();
  let loads = 0;
  const load = () => (loads++, series(3));
  cache.get("r", "loss", load);
  const again = cache.get("r", "loss", load);
  assertEquals([loads, again.length, Array.from(again.values.subarray(0, 3))], [1, 3, [0, 10, 20]]);
});

Deno.test("SeriesCache appends points written in step order, and forgets a series on a rewrite", () => {
  const cache = new SeriesCache();
  let loads = 0;
  const load = () => (loads++, series(3));
  cache.get("r", "loss", load);
  cache.onWrite("r", [pt(3, 30), pt(4, 40), { ...pt(5, 1), key: "other" }]);
  const grown = cache.get("r", "loss", load);
  assertEquals([loads, grown.length, grown.values[4]], [1, 5, 40]);
  cache.onWrite("r", [pt(2, 99)]); // an existing step: the newest write wins in the store
  cache.get("r", "loss", load);
  assertEquals(loads, 2);
});

Deno.test("SeriesCache stays under its byte bound, dropping the least recently used", () => {
  const cache = new SeriesCache(24 * 1000 * 2); // two series of 1000 points
  const load = () => series(1000);
  cache.get("a", "loss", load);
  cache.get("b", "loss", load);
  cache.get("a", "loss", load); // a is now the most recent
  cache.get("c", "loss", load);
  assertEquals(cache.size, 2);
  let loads = 0;
  cache.get("a", "loss", () => (loads++, series(1000)));
  cache.get("b", "loss", () => (loads++, series(1000)));
  assertEquals(loads, 1, "b was evicted, a was kept");
});

Deno.test("SeriesCache shares one slow load between callers, and keeps it only if no write came in between", async () => {
  const cache = new SeriesCache();
  let loads = 0;
  let finish!: () => void;
  const load = () => {
    loads++;
    return new Promise<ReturnType<typeof series>>((r) => finish = () => r(series(3)));
  };
  const a = cache.getAsync("r", "loss", load);
  const b = cache.getAsync("r", "loss", load);
  cache.onWrite("r", [pt(1, 99)]); // lands behind the load's position
  finish();
  assertEquals([(await a).length, (await b).length, loads], [3, 3, 1]);
  assertEquals(
    cache.peek("r", "loss"),
    undefined,
    "a load that may have missed a write is not kept",
  );
  const c = cache.getAsync("r", "loss", load);
  finish();
  await c;
  assertEquals([cache.peek("r", "loss")?.length, loads], [3, 2]);
});
