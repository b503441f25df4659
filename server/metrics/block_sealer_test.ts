import { assertEquals } from "../../tests/assert.ts";
import { Bus } from "../bus/bus.ts";
import { type Context, randomId } from "../context.ts";
import { openDatabase } from "../db/mod.ts";
import { BLOCK_POINTS, readSeriesColumns } from "../db/metric_blocks.ts";
import { type PointWrite, readSeries, writePoints } from "../db/metrics.ts";
import { silentLogger } from "../../lib/log.ts";
import { BlockSealer } from "./block_sealer.ts";

function context(): Context {
  return {
    db: openDatabase(":memory:"),
    bus: new Bus(),
    log: silentLogger,
    now: () => new Date(),
    newId: randomId,
    backupDir: "/nonexistent",
  };
}

function write(ctx: Context, key: string, from: number, to: number) {
  const points: PointWrite[] = [];
  for (let i = from; i < to; i++) points.push({ key, step: i, value: i / 7, wall_time: i });
  ctx.db.tx(() => writePoints(ctx.db, "r", points));
}

const sealedPoints = (ctx: Context, key: string) =>
  (ctx.db.sqlite.prepare("SELECT COALESCE(SUM(points), 0) AS n FROM metric_blocks WHERE key = ?")
    .get(key) as { n: number }).n;

Deno.test("the sealer seals the most unsealed series first, a few blocks a step, then rests", () => {
  const ctx = context();
  write(ctx, "long", 0, 5 * BLOCK_POINTS + 7);
  write(ctx, "short", 0, BLOCK_POINTS + 1);
  write(ctx, "tiny", 0, 100);
  const sealer = new BlockSealer(ctx, { blocksPerStep: 2 });
  const steps: [number, number, number][] = [];
  for (let i = 0; i < 6; i++) {
    const blocks = sealer.runOnce();
    steps.push([blocks, sealedPoints(ctx, "long"), sealedPoints(ctx, "short")]);
  }
  const B = BLOCK_POINTS;
  assertEquals(steps, [
    [2, 2 * B, 0],
    [2, 4 * B, 0], // long still has the most unsealed points (B + 7 > B + 1)
    [1, 5 * B, 0],
    [1, 5 * B, B],
    [0, 5 * B, B], // nothing with a whole block left: the tails stay rows
    [0, 5 * B, B],
  ]);
  for (const key of ["long", "short", "tiny"]) {
    const c = readSeriesColumns(ctx.db, "r", key);
    assertEquals(Array.from(c.values.subarray(0, c.length)), readSeries(ctx.db, "r", key).values);
  }
  ctx.db.close();
});

Deno.test("a series sealed to its last whole block hands the next step to the next series", () => {
  const ctx = context();
  // Whole blocks only, a multiple of blocksPerStep: the step after the last one of "a" seals
  // nothing of "a", and must go on to "b" instead of answering 0 ("no work").
  write(ctx, "a", 0, 4 * BLOCK_POINTS);
  write(ctx, "b", 0, 4 * BLOCK_POINTS);
  const sealer = new BlockSealer(ctx, { blocksPerStep: 2 });
  const steps = Array.from({ length: 5 }, () => sealer.runOnce());
  assertEquals(steps, [2, 2, 2, 2, 0]);
  assertEquals([sealedPoints(ctx, "a"), sealedPoints(ctx, "b")], [
    4 * BLOCK_POINTS,
    4 * BLOCK_POINTS,
  ]);
  ctx.db.close();
});

Deno.test("a running sealer catches up with a growing series and stops cleanly", async () => {
  const ctx = context();
  const sealer = new BlockSealer(ctx, { busyMs: 1, idleMs: 5 });
  sealer.start();
  try {
    write(ctx, "loss", 0, 2 * BLOCK_POINTS);
    for (let i = 0; i < 200 && sealedPoints(ctx, "loss") < 2 * BLOCK_POINTS; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(sealedPoints(ctx, "loss"), 2 * BLOCK_POINTS);
  } finally {
    sealer.stop();
    ctx.db.close();
  }
});
