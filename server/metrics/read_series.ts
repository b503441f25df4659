/**
 * Reading a whole series without stalling the server. A series of millions of points takes
 * seconds to read out of SQLite, and `node:sqlite` reads synchronously: done in one call,
 * that would hold every other request and the agents' heartbeats (long enough for a healthy
 * node to be marked OFFLINE). So a series is read in chunks of READ_CHUNK_POINTS with a turn
 * of the event loop between them, and at most MAX_CONCURRENT_SERIES_LOADS series are read
 * from the store at once, which bounds the memory that many concurrent queries can hold.
 */
import { metricBlocks } from "../db/mod.ts";
import type { SeriesColumns } from "../db/metric_blocks.ts";
import type { Database } from "../db/database.ts";
import type { Context } from "../context.ts";
import { setImmediate } from "node:timers";

/** Series read from the store at once; more wait their turn. */
export const MAX_CONCURRENT_SERIES_LOADS = 2;

/** A step or wall-time range, both ends included. */
export interface SeriesRange {
  column: "step" | "wall_time";
  from: number;
  to: number;
}

/**
 * Lets timers, sockets and other requests run before the next chunk. `setImmediate` runs
 * after pending I/O without the clamp nested `setTimeout(0)` gets (a few ms a turn).
 */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A series' columns (limited to `range`): from the series cache when the context has one
 * and holds it; a whole series read from the store is then kept there.
 */
export async function readSeries(
  ctx: Context,
  runId: string,
  key: string,
  range?: SeriesRange,
): Promise<SeriesColumns> {
  const cached = ctx.series?.peek(runId, key);
  if (cached) return range ? within(cached, range) : view(cached);
  if (!range && ctx.series) {
    return view(await ctx.series.getAsync(runId, key, () => load(ctx.db, runId, key)));
  }
  if (range?.column === "step") {
    return view(await load(ctx.db, runId, key, Math.ceil(range.from) - 1, Math.floor(range.to)));
  }
  const all = await load(ctx.db, runId, key);
  return range ? within(all, range) : view(all);
}

/** The filled part of columns that may have room to grow. */
function view(s: SeriesColumns): SeriesColumns {
  return {
    steps: s.steps.subarray(0, s.length),
    values: s.values.subarray(0, s.length),
    wallTimes: s.wallTimes.subarray(0, s.length),
    length: s.length,
  };
}

/** Reads steps in `(afterStep, toStep]` chunk by chunk, one load per slot of the limiter. */
function load(
  db: Database,
  runId: string,
  key: string,
  afterStep = -1, // steps are never negative
  toStep = Infinity,
): Promise<SeriesColumns> {
  return limiterOf(db).run(async () => {
    const whole = afterStep < 0 && !Number.isFinite(toStep);
    const mark = metricBlocks.sealMark(db, runId, key);
    const out = new metricBlocks.ColumnsBuilder(
      whole ? metricBlocks.expectedPoints(db, runId, key) : 0,
    );
    let after = afterStep;
    let fromBlocks = 0;
    for (;;) {
      const chunk = metricBlocks.appendSeriesChunk(
        db,
        runId,
        key,
        after,
        toStep,
        metricBlocks.READ_CHUNK_POINTS,
        out,
      );
      if (chunk.added === 0) break;
      fromBlocks += chunk.fromBlocks;
      after = out.lastStep();
      await nextTurn();
    }
    if (whole) metricBlocks.afterWholeRead(db, runId, key, mark, fromBlocks);
    return out.columns();
  });
}

/** The points of `s` inside `range`: a view for steps (ascending), a copy for wall times. */
function within(s: SeriesColumns, range: SeriesRange): SeriesColumns {
  if (range.column === "step") {
    const lo = bound(s.steps, s.length, (v) => v < range.from);
    const hi = bound(s.steps, s.length, (v) => v <= range.to);
    return {
      steps: s.steps.subarray(lo, hi),
      values: s.values.subarray(lo, hi),
      wallTimes: s.wallTimes.subarray(lo, hi),
      length: Math.max(0, hi - lo),
    };
  }
  const keep: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s.wallTimes[i] >= range.from && s.wallTimes[i] <= range.to) keep.push(i);
  }
  return {
    steps: Float64Array.from(keep, (i) => s.steps[i]),
    values: Float64Array.from(keep, (i) => s.values[i]),
    wallTimes: Float64Array.from(keep, (i) => s.wallTimes[i]),
    length: keep.length,
  };
}

/** The first index in the first `n` of ascending `a` where `before` stops holding. */
function bound(a: Float64Array, n: number, before: (v: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(a[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A FIFO of at most `max` tasks at once. */
class Limiter {
  #active = 0;
  #waiting: (() => void)[] = [];
  constructor(readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    while (this.#active >= this.max) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active++;
    try {
      return await task();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

const limiters = new WeakMap<Database, Limiter>();

function limiterOf(db: Database): Limiter {
  let l = limiters.get(db);
  if (!l) limiters.set(db, l = new Limiter(MAX_CONCURRENT_SERIES_LOADS));
  return l;
}
