import fc from "fast-check";
import { assert, assertEquals } from "../../tests/assert.ts";
import { type Context, createContext } from "../context.ts";
import { backupDatabase, openDatabase } from "../db/mod.ts";
import { BLOCK_POINTS, readSeriesColumns } from "../db/metric_blocks.ts";
import { type PointWrite, writePoints } from "../db/metrics.ts";
import { registerSdkRun } from "../runs/service.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import type { Series } from "../../protocol/objects.ts";
import { BlockSealer } from "./block_sealer.ts";
import { shape } from "./query.ts";
import { type SeriesRange, summaryLevelFor, withChartSeries } from "./read_series.ts";
import { queryMetrics } from "./service.ts";

function context(path = ":memory:"): Context {
  return createContext({ db: openDatabase(path), backupDir: "/nonexistent" });
}

function write(ctx: Context, runId: string, points: PointWrite[]): void {
  for (let at = 0; at < points.length; at += 20_000) {
    ctx.db.tx(() => writePoints(ctx.db, runId, points.slice(at, at + 20_000)));
  }
}

function sealAll(ctx: Context): void {
  const sealer = new BlockSealer(ctx);
  while (sealer.runOnce() > 0) { /* what the server does in the background */ }
}

/** Where a chart of the series is read from: how many points, standing for how many. */
function source(ctx: Context, runId: string, key: string, maxPoints: number, range?: SeriesRange) {
  return withChartSeries(ctx, runId, key, range, maxPoints, (c, total) => ({
    kept: c.length,
    total,
    fromSummaries: c.length < total,
  }));
}

async function query(ctx: Context, runId: string, maxPoints: number, more = {}): Promise<Series> {
  const q = { runs: [runId], keys: ["loss"], max_points: maxPoints, ...more };
  return (await queryMetrics(ctx, q)).series[0];
}

/** The answer LTTB gives over every point of the series (the reads before summaries). */
function exactAnswer(ctx: Context, runId: string, maxPoints: number, x: "step" | "wall") {
  const c = readSeriesColumns(ctx.db, runId, "loss");
  const view = {
    steps: c.steps.subarray(0, c.length),
    values: c.values.subarray(0, c.length),
    wallTimes: c.wallTimes.subarray(0, c.length),
    length: c.length,
  };
  return shape(runId, "loss", view, maxPoints, x);
}

const finiteOf = (xs: (number | string)[] | undefined) =>
  (xs ?? []).filter((v): v is number => typeof v === "number");

Deno.test("a chart from summaries keeps the extremes, every NaN/Inf, and stays within the raw band (random series)", async () => {
  const series = fc.record({
    blocks: fc.integer({ min: 5, max: 11 }),
    tail: fc.integer({ min: 0, max: BLOCK_POINTS - 1 }),
    maxPoints: fc.integer({ min: 100, max: 600 }),
    coarse: fc.boolean(), // ask for few enough points to read the coarse summaries
    stride: fc.constantFrom(1, 3),
    shape: fc.constantFrom("noise", "walk", "decay"),
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    spikes: fc.array(
      fc.tuple(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({
          min: -1e6,
          max: 1e6,
          noNaN: true,
        }),
      ),
      { maxLength: 4 },
    ),
    odd: fc.array(
      fc.tuple(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(NaN, Infinity, -Infinity),
      ),
      { maxLength: 6 },
    ),
    x: fc.constantFrom("step" as const, "wall" as const),
  });
  await fc.assert(
    fc.asyncProperty(series, async (p) => {
      const n = p.blocks * BLOCK_POINTS + p.tail;
      let state = p.seed;
      const random = () => (state = (state * 48271) % 2147483647) / 2147483647;
      const values = new Float64Array(n);
      let walk = 0;
      for (let i = 0; i < n; i++) {
        walk += random() - 0.5;
        values[i] = p.shape === "noise"
          ? random()
          : p.shape === "walk"
          ? walk
          : Math.exp(-i / n * 4) + random() * 0.01;
      }
      for (const [at, v] of p.spikes) values[Math.floor(at * (n - 1))] = v;
      for (const [at, v] of p.odd) values[Math.floor(at * (n - 1))] = v;
      const ctx = context();
      try {
        const runId = registerSdkRun(ctx, { project: "p" }).run.id;
        write(
          ctx,
          runId,
          Array.from(values, (value, i) => ({
            key: "loss",
            step: i * p.stride,
            value,
            wall_time: 1.7e9 + i / 2,
          })),
        );
        sealAll(ctx);
        const maxPoints = p.coarse ? Math.floor(n / 300) : p.maxPoints;
        const from = await source(ctx, runId, "loss", maxPoints);
        assert(from.fromSummaries, "read from summaries");
        assertEquals(from.total, n);
        // 32 points a bucket, or 256 from 256 points per point asked for.
        const bucket = summaryLevelFor(n, maxPoints)!.bucket;
        assertEquals(bucket, p.coarse ? 256 : n >= 256 * maxPoints ? 256 : 32);
        // At most 2 points a bucket, NaN/Inf markers, and each block's (and the tail's) ends.
        const most = (2 * n) / bucket + 3 * p.odd.length + 4 * (p.blocks + 1);
        assert(from.kept <= most, `${from.kept} summary points, at most ${most}`);
        const got = await query(ctx, runId, maxPoints, { x: p.x });
        const raw = exactAnswer(ctx, runId, maxPoints, p.x);
        assertEquals([got.total_points, got.downsampled], [n, true]);
        assert(got.steps.length <= maxPoints);
        assertEquals(Object.keys(got).sort(), Object.keys(raw).sort(), "the same wire shape");
        // Every point drawn is a point of the series, the first and last included.
        const at = got.steps.map((s) => s / p.stride);
        at.forEach((i, k) => {
          assertEquals(got.values[k], encodeMetricValue(values[i]));
          assertEquals(got.wall_times[k], 1.7e9 + i / 2);
        });
        assertEquals([got.steps[0], got.steps.at(-1)], [raw.steps[0], raw.steps.at(-1)]);
        // The global extremes survive in the bands.
        const finite = Array.from(values).filter(Number.isFinite);
        assertEquals(Math.min(...finiteOf(got.min)), Math.min(...finite));
        assertEquals(Math.max(...finiteOf(got.max)), Math.max(...finite));
        // Every NaN/±Inf is marked within its bucket.
        for (let i = 0; i < n; i++) {
          if (Number.isFinite(values[i])) continue;
          const b = Math.floor(i / bucket) * bucket;
          const want = encodeMetricValue(values[i]);
          assert(
            at.some((j, k) => j >= b && j < b + bucket && got.values[k] === want),
            `${want} at point ${i} is marked`,
          );
        }
        // The band drawn holds every point of the series within W points of it: a point's
        // bucket's lowest and highest points are in the summary, within a bucket of it, and
        // each lands in an LTTB bucket of at most ceil(every) + 1 summary points, which lie
        // at most two buckets apart, around the point drawn for it.
        const every = (from.kept - 2) / (maxPoints - Math.floor(maxPoints / 10) - 2);
        const W = bucket + (Math.ceil(every) + 1) * 2 * bucket;
        const bandNear = (i: number, reach: number) => {
          let lo = Infinity;
          let hi = -Infinity;
          at.forEach((j, k) => {
            if (Math.abs(j - i) > reach) return;
            if (typeof got.min![k] === "number") lo = Math.min(lo, got.min![k] as number);
            if (typeof got.max![k] === "number") hi = Math.max(hi, got.max![k] as number);
          });
          return [lo, hi];
        };
        for (let i = 0; i < n; i += 97) {
          if (!Number.isFinite(values[i])) continue;
          const [lo, hi] = bandNear(i, W);
          assert(lo <= values[i] && values[i] <= hi, `point ${i} within the band`);
        }
        // So is what LTTB over every point draws, band included, within W and one of its
        // buckets.
        const R = Math.ceil((n - 2) / (maxPoints - Math.floor(maxPoints / 10) - 2)) + 1;
        raw.steps.forEach((s, k) => {
          const [lo, hi] = bandNear(s / p.stride, W + R);
          for (const v of [raw.min![k], raw.max![k]]) {
            if (typeof v === "number") assert(lo <= v && v <= hi, `raw LTTB ${v} near ${s}`);
          }
        });
      } finally {
        ctx.db.close();
      }
    }),
    { numRuns: 12, seed: 7 },
  );
});

/** A long series with a spike, a dip, a NaN and an Infinity, past its last whole block. */
function longSeries(n: number): PointWrite[] {
  return Array.from({ length: n }, (_, i) => ({
    key: "loss",
    step: i,
    value: i === 70_001
      ? 50
      : i === 9_999
      ? -3
      : i === 33_333
      ? NaN
      : i === 101_000
      ? Infinity
      : 1 / (1 + i / 1000) + (i % 7) / 1000,
    wall_time: 1.7e9 + i,
  }));
}

const countOf = (ctx: Context, table: string) =>
  (ctx.db.sqlite.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

/** What every answer from summaries must show of `longSeries`. */
function assertFaithful(s: Series, points: PointWrite[]) {
  assertEquals([s.total_points, s.downsampled, s.steps.length], [points.length, true, 2000]);
  assertEquals([s.steps[0], s.steps.at(-1)], [0, points.length - 1]);
  assertEquals([Math.min(...finiteOf(s.min)), Math.max(...finiteOf(s.max))], [-3, 50]);
  assert(s.values.includes("NaN") && s.values.includes("Infinity"));
  s.steps.forEach((step, k) => assertEquals(s.values[k], encodeMetricValue(points[step].value)));
}

Deno.test("right after a restart a long series is charted from summaries, tail included, not from blocks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const n = 27 * BLOCK_POINTS + 1234;
    const points = longSeries(n);
    const first = context(`${dir}/store.db`);
    const runId = registerSdkRun(first, { project: "p" }).run.id;
    write(first, runId, points);
    sealAll(first);
    assertEquals(countOf(first, "metric_summaries"), 27);
    first.db.close();
    // A restart: a fresh context (an empty series cache) on the same file. The blocks are
    // overwritten with zeros, so an answer read from them would be wrong.
    const restarted = context(`${dir}/store.db`);
    restarted.db.sqlite.exec("UPDATE metric_blocks SET data = zeroblob(length(data))");
    const from = await source(restarted, runId, "loss", 2000);
    assertEquals([from.fromSummaries, from.total], [true, n]);
    assert(from.kept < n / 12, `${from.kept} summary points for ${n}`);
    assertFaithful(await query(restarted, runId, 2000), points);
    assertEquals(restarted.series?.size, 0, "nothing read into memory");
    // 256 points or more per point asked for: the coarse summaries, an eighth of the size.
    const coarse = await source(restarted, runId, "loss", 400);
    assertEquals([coarse.fromSummaries, coarse.total], [true, n]);
    assert(coarse.kept < n / 100, `${coarse.kept} coarse summary points for ${n}`);
    const chart = await query(restarted, runId, 400);
    assertEquals([chart.total_points, chart.steps.length, chart.steps.at(-1)], [n, 400, n - 1]);
    assertEquals([Math.min(...finiteOf(chart.min)), Math.max(...finiteOf(chart.max))], [-3, 50]);
    assert(chart.values.includes("NaN") && chart.values.includes("Infinity"));
    // Exact reads (a short range, small max_points ratio) still read every point.
    const range = await query(restarted, runId, 2000, { range: [70_000, 70_009] });
    assertEquals(range.steps, Array.from({ length: 10 }, (_, i) => 70_000 + i));
    assertEquals(range.values[1], 50);
    restarted.db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a step range that cuts blocks is charted from summaries, its cut blocks read and reduced", async () => {
  const ctx = context();
  const n = 30 * BLOCK_POINTS;
  const points = longSeries(n);
  const runId = registerSdkRun(ctx, { project: "p" }).run.id;
  write(ctx, runId, points);
  sealAll(ctx);
  const range: SeriesRange = { column: "step", from: 9_000.5, to: 110_000 };
  const from = await source(ctx, runId, "loss", 2000, range);
  assertEquals([from.fromSummaries, from.total], [true, 110_000 - 9_001 + 1]);
  const s = await query(ctx, runId, 2000, { range: [9_000.5, 110_000] });
  assertEquals([s.total_points, s.steps[0], s.steps.at(-1)], [from.total, 9_001, 110_000]);
  assertEquals([Math.min(...finiteOf(s.min)), Math.max(...finiteOf(s.max))], [-3, 50]);
  assert(s.values.includes("NaN") && s.values.includes("Infinity"));
  // Fewer than 32 points per output point: every point is read, as before summaries.
  const dense = await source(ctx, runId, "loss", 2000, { column: "step", from: 0, to: 50_000 });
  assertEquals([dense.fromSummaries, dense.total], [false, 50_001]);
  ctx.db.close();
});

Deno.test("a write into a sealed range drops its blocks and summaries; they are sealed again with it", async () => {
  const ctx = context();
  const n = 20 * BLOCK_POINTS + 10;
  const points = longSeries(n);
  const runId = registerSdkRun(ctx, { project: "p" }).run.id;
  write(ctx, runId, points);
  sealAll(ctx);
  write(ctx, runId, [{ key: "loss", step: 5 * BLOCK_POINTS + 3, value: -40, wall_time: 1 }]);
  const counts = () =>
    ["metric_blocks", "metric_summaries", "metric_summaries_coarse"].map((t) => countOf(ctx, t));
  assertEquals(counts(), [5, 5, 5]);
  // Until resealed, the rows stand in for the dropped blocks (reduced like them).
  const before = await query(ctx, runId, 2000);
  assertEquals(Math.min(...finiteOf(before.min)), -40);
  sealAll(ctx);
  assertEquals(counts(), [20, 20, 20]);
  const seal = ctx.db.sqlite.prepare("SELECT sealed_step, summarized_step FROM metric_seals")
    .get() as { sealed_step: number; summarized_step: number };
  assertEquals(seal.summarized_step, seal.sealed_step);
  ctx.series = undefined;
  const after = await query(ctx, runId, 2000);
  assert((await source(ctx, runId, "loss", 2000)).fromSummaries);
  assertEquals(Math.min(...finiteOf(after.min)), -40);
  assert(after.steps.includes(5 * BLOCK_POINTS + 3), "the new low is drawn");
  ctx.db.close();
});

Deno.test("a store sealed before summaries existed is migrated, charted from blocks, then summarised in the background", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const n = 25 * BLOCK_POINTS + 99;
    const points = longSeries(n);
    const old = context(`${dir}/store.db`);
    const runId = registerSdkRun(old, { project: "p" }).run.id;
    write(old, runId, points);
    sealAll(old);
    // Back to schema 10's shape: no summaries, no summarized_step, version 12 not applied.
    old.db.sqlite.exec(`DROP TABLE metric_summaries; DROP TABLE metric_summaries_coarse;
      ALTER TABLE metric_seals DROP COLUMN summarized_step;
      DELETE FROM schema_version WHERE version = 12;`);
    old.db.close();
    const ctx = context(`${dir}/store.db`);
    assertEquals(countOf(ctx, "metric_summaries"), 0);
    const exact = exactAnswer(ctx, runId, 2000, "step");
    assertEquals((await source(ctx, runId, "loss", 2000)).fromSummaries, false);
    assertEquals(await query(ctx, runId, 2000), exact, "the answer LTTB over blocks gives");
    const sealer = new BlockSealer(ctx, { summariesPerStep: 10 });
    assertEquals([sealer.runOnce(), sealer.runOnce(), sealer.runOnce(), sealer.runOnce()], [
      10,
      10,
      5,
      0,
    ]);
    assertEquals(countOf(ctx, "metric_summaries"), 25);
    assertEquals(countOf(ctx, "metric_summaries_coarse"), 25);
    ctx.series = undefined;
    assert((await source(ctx, runId, "loss", 2000)).fromSummaries);
    assertFaithful(await query(ctx, runId, 2000), points);
    ctx.db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("blocks sealed while older ones wait for summaries leave no gap in a chart", async () => {
  const ctx = context();
  const points = longSeries(40 * BLOCK_POINTS);
  const runId = registerSdkRun(ctx, { project: "p" }).run.id;
  write(ctx, runId, points.slice(0, 20 * BLOCK_POINTS));
  sealAll(ctx);
  // The first 20 blocks lose their summaries (as if sealed by an older version), then 20
  // more are sealed with theirs: summaries exist for blocks 20–39 only.
  ctx.db.sqlite.exec(`DELETE FROM metric_summaries; DELETE FROM metric_summaries_coarse;
    UPDATE metric_seals SET summarized_step = NULL`);
  write(ctx, runId, points.slice(20 * BLOCK_POINTS));
  const sealer = new BlockSealer(ctx);
  for (let i = 0; i < 5; i++) assertEquals(sealer.runOnce(), 4); // sealing goes first
  assertEquals([countOf(ctx, "metric_blocks"), countOf(ctx, "metric_summaries")], [40, 20]);
  // A range over both halves: read from blocks where no summary is, from summaries after.
  const range: SeriesRange = { column: "step", from: 0, to: 40 * BLOCK_POINTS };
  const from = await source(ctx, runId, "loss", 1000, range);
  assertEquals([from.fromSummaries, from.total], [true, 40 * BLOCK_POINTS]);
  assertFaithful(await query(ctx, runId, 2000, { range: [0, 40 * BLOCK_POINTS] }), points);
  ctx.db.close();
});

Deno.test("a backup holds the summaries: a store restored from it charts from them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const points = longSeries(26 * BLOCK_POINTS + 5);
    const ctx = context(`${dir}/store.db`);
    const runId = registerSdkRun(ctx, { project: "p" }).run.id;
    write(ctx, runId, points);
    sealAll(ctx);
    const answer = await query(ctx, runId, 2000);
    const backup = await backupDatabase(ctx.db, `${dir}/backups`, new Date());
    ctx.db.close();
    const restored = context(backup.path);
    assertEquals(countOf(restored, "metric_summaries"), 26);
    assert((await source(restored, runId, "loss", 2000)).fromSummaries);
    assertEquals(await query(restored, runId, 2000), answer);
    restored.db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
