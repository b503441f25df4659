import { assert, assertEquals, assertRejects, assertThrows } from "../../tests/assert.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import { sdkRun, testContext } from "../runs/_test_context.ts";
import { getRunMetrics, queryMetrics, readPointsPage } from "./service.ts";

function withLoss(points: number) {
  const ctx = testContext();
  sdkRun(ctx, { id: "r-1" }, {
    points: Array.from({ length: points }, (_, i) => ({
      key: "loss",
      step: i,
      value: i === 3 ? NaN : 1 / (i + 1),
      wall_time: 1000 + i,
    })),
  });
  return ctx;
}

Deno.test("queryMetrics() answers each series and names what does not exist", async () => {
  const ctx = withLoss(5);
  const answer = await queryMetrics(ctx, { runs: ["r-1", "r-x"], keys: ["loss", "acc"] });
  assertEquals(answer.max_points, 2000);
  assertEquals(answer.missing, [
    { run_id: "r-1", key: "acc", reason: "no such key in this run" },
    { run_id: "r-x", key: "loss", reason: "no such run" },
    { run_id: "r-x", key: "acc", reason: "no such run" },
  ]);
  assertEquals(answer.series.length, 1);
  const s = answer.series[0];
  assertEquals([s.run_id, s.key, s.total_points, s.downsampled], ["r-1", "loss", 5, false]);
  assertEquals(s.steps, [0, 1, 2, 3, 4]);
  assertEquals(s.values, [1, 0.5, 1 / 3, "NaN", 0.2]);
});

Deno.test("queryMetrics() downsamples a series longer than max_points", async () => {
  const ctx = withLoss(100);
  const [s] = (await queryMetrics(ctx, { runs: ["r-1"], keys: ["loss"], max_points: 10 })).series;
  assertEquals([s.total_points, s.downsampled, s.steps.length], [100, true, 10]);
  assertEquals([s.steps[0], s.steps[9]], [0, 99]);
});

Deno.test("getRunMetrics() lists the run's keys, and with keys their series", async () => {
  const ctx = withLoss(5);
  const keysOnly = await getRunMetrics(ctx, "r-1", {});
  assertEquals(keysOnly.keys.map((k) => k.key), ["loss"]);
  assert(!("series" in keysOnly));
  const withSeries = await getRunMetrics(ctx, "r-1", { keys: ["loss", "acc"], max_points: 3 });
  assert("series" in withSeries);
  assertEquals(withSeries.series[0].steps.length, 3);
  assertEquals(withSeries.missing.map((m) => m.key), ["acc"]);
  const err = await assertRejects(() => getRunMetrics(ctx, "r-x", {}), '"r-x"');
  assert(err instanceof NotFoundError);
  const bad = await assertRejects(
    () => getRunMetrics(ctx, "r-1", { keys: Array.from({ length: 201 }, (_, i) => `k${i}`) }),
    "keys",
  );
  assert(bad instanceof ValidationError);
});

Deno.test("readPointsPage() pages through a whole series by cursor", () => {
  const ctx = withLoss(5);
  const first = readPointsPage(ctx, "r-1", { key: "loss", limit: 3 });
  assertEquals(first.steps, [0, 1, 2]);
  assertEquals(first.next_cursor, "2");
  const last = readPointsPage(ctx, "r-1", { key: "loss", cursor: first.next_cursor!, limit: 3 });
  assertEquals(last.steps, [3, 4]);
  assertEquals(last.values, ["NaN", 0.2]);
  assertEquals(last.next_cursor, null);
  assert(assertThrows(() => readPointsPage(ctx, "r-1", { key: "acc" })) instanceof NotFoundError);
  assertThrows(() => readPointsPage(ctx, "r-x", { key: "loss" }), 'Run "r-x"');
});
