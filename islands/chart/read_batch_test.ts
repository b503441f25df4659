import { assertEquals, assertRejects } from "../../tests/assert.ts";
import { MAX_QUERY_SERIES } from "../../protocol/limits.ts";
import { groupAsks, readBatch, type SeriesQuery } from "./read_batch.ts";
import type { ApiSeries } from "./panel_types.ts";

const runs = ["a", "b", "c"];

Deno.test("groupAsks() reads panels of the same runs and width in one query", () => {
  assertEquals(
    groupAsks([
      { runs, key: "eval/m1", max_points: 600 },
      { runs, key: "eval/m2", max_points: 600 },
      { runs: ["a"], key: "loss", max_points: 1250 },
    ]),
    [
      { runs, keys: ["eval/m1", "eval/m2"], max_points: 600 },
      { runs: ["a"], keys: ["loss"], max_points: 1250 },
    ],
  );
});

Deno.test("groupAsks() starts another query where one would pass the query's limits", () => {
  const ten = Array.from({ length: 10 }, (_, i) => `r${i}`);
  const asks = Array.from({ length: 12 }, (_, k) => ({ runs: ten, key: `k${k}`, max_points: 600 }));
  const qs = groupAsks(asks);
  assertEquals(qs.map((q) => q.keys.length), [MAX_QUERY_SERIES / 10, 2]);
  assertEquals(qs.flatMap((q) => q.keys), asks.map((a) => a.key));
  // Points: 20 series of 100,000 points would be 2,000,000.
  assertEquals(
    groupAsks([
      { runs: ten, key: "x", max_points: 100_000 },
      { runs: ten, key: "y", max_points: 100_000 },
    ]).length,
    2,
  );
});

const series = (run_id: string, key: string): ApiSeries => ({
  run_id,
  key,
  steps: [0],
  values: [1],
  wall_times: [0],
  total_points: 1,
  downsampled: false,
});

Deno.test("readBatch() sends the asks of one task as one query and answers each its own", async () => {
  const sent: SeriesQuery[] = [];
  const batch = readBatch((q) => {
    sent.push(q);
    return Promise.resolve(q.runs.flatMap((r) => q.keys.map((k) => series(r, k))));
  });
  const [one, two] = await Promise.all([
    batch.ask({ runs: ["a", "b"], key: "m1", max_points: 600 }),
    batch.ask({ runs: ["b"], key: "m2", max_points: 600 }),
  ]);
  assertEquals(sent, [{ runs: ["a", "b"], keys: ["m1", "m2"], max_points: 600 }]);
  assertEquals(one.map((s) => [s.run_id, s.key]), [["a", "m1"], ["b", "m1"]]);
  assertEquals(two.map((s) => [s.run_id, s.key]), [["b", "m2"]], "not run a's m2");
  // A later task's ask is a query of its own.
  await batch.ask({ runs: ["c"], key: "m1", max_points: 600 });
  assertEquals(sent.length, 2);
});

Deno.test("readBatch() fails every ask of a query that fails, and only those", async () => {
  const batch = readBatch((q) =>
    q.max_points === 600 ? Promise.reject(new Error("503")) : Promise.resolve([series("a", "x")])
  );
  const failed = batch.ask({ runs: ["a"], key: "m1", max_points: 600 });
  const fine = batch.ask({ runs: ["a"], key: "x", max_points: 1250 });
  await assertRejects(() => failed, "503");
  assertEquals((await fine).length, 1);
});

Deno.test("readBatch().flush() sends what was asked so far at once, and nothing twice", async () => {
  const sent: SeriesQuery[] = [];
  const batch = readBatch((q) => {
    sent.push(q);
    return Promise.resolve([]);
  });
  const asked = batch.ask({ runs: ["a"], key: "m1", max_points: 600 });
  batch.flush();
  assertEquals(sent, [{ runs: ["a"], keys: ["m1"], max_points: 600 }], "before any microtask");
  batch.flush();
  await asked;
  assertEquals(sent.length, 1);
});
