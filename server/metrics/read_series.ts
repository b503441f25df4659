/**
 * Reading a whole series without stalling the server. A series of millions of points takes
 * seconds to read out of SQLite, and `node:sqlite` reads synchronously: done in one call,
 * that would hold every other request and the agents' heartbeats (long enough for a healthy
 * node to be marked OFFLINE). So a series is read in chunks of READ_CHUNK_POINTS with a turn
 * of the event loop between them, and at most MAX_CONCURRENT_SERIES_LOADS series are read
 * from the store at once, which bounds the memory that many concurrent queries can hold.
 *
 * A chart of a long series that is not in memory reads the series' block summaries instead
 * (`withChartSeries`): a sixteenth of the points or fewer, with every extreme and NaN/Inf
 * marker.
 */
import { metricBlocks } from "../db/mod.ts";
import type { ColumnsBuilder, SeriesColumns } from "../db/metric_blocks.ts";
import {
  appendSummaries,
  summarizeInto,
  SUMMARY_LEVELS,
  summaryCoverage,
  type SummaryLevel,
} from "../db/metric_summaries.ts";
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

/**
 * The summary a chart of `maxPoints` over `points` is read from: the coarsest with at least
 * one bucket for each output point, so it loses nothing at the chart's resolution (see
 * `summarize.ts`: 256 or more points per output point read the coarse one, 32 or more the
 * fine one); none below that.
 */
export function summaryLevelFor(points: number, maxPoints: number): SummaryLevel | undefined {
  return SUMMARY_LEVELS.find((l) => points >= l.bucket * maxPoints);
}

/** Unsealed points in the range above which a chart is read exactly (and cached) instead. */
export const SUMMARY_MAX_TAIL = 4 * metricBlocks.BLOCK_POINTS;

/** Summaries read in one synchronous step of a long read (about 250,000 points). */
const SUMMARY_CHUNK_BLOCKS = 64;

/**
 * Calls `use` with the columns a chart of `maxPoints` points is downsampled from, and the
 * number of points they stand for. A series in memory, a short one, one read by wall time,
 * or one whose summaries are not written yet is read exactly (`readSeries`: `total` is its
 * length); a long one otherwise comes from its block summaries, with the points not in a
 * summarised block (the unsealed tail, a block cut by the range) read and reduced the same
 * way. Summary columns are reused once `use` returns: it must not keep them.
 */
export async function withChartSeries<T>(
  ctx: Context,
  runId: string,
  key: string,
  range: SeriesRange | undefined,
  maxPoints: number,
  use: (columns: SeriesColumns, total: number) => T,
): Promise<T> {
  if (range?.column !== "wall_time" && !ctx.series?.peek(runId, key)) {
    const from = range ? range.from : -Infinity;
    const to = range ? range.to : Infinity;
    const cover = summaryCoverage(ctx.db, runId, key, range, SUMMARY_MAX_TAIL);
    const level = summaryLevelFor(cover.summarized, maxPoints);
    if (level && cover.tail < SUMMARY_MAX_TAIL) {
      const out = takeColumns(Math.ceil(cover.summarized * 3 / level.bucket) + cover.tail);
      const scratch = takeColumns(0);
      try {
        const total = await loadSummarized(ctx.db, level, runId, key, from, to, out, scratch);
        // A nearly constant series leaves too few summary points to downsample: read exactly.
        if (out.length > maxPoints) return use(view(out), total);
      } finally {
        giveBack(out);
        giveBack(scratch);
      }
    }
  }
  const columns = await readSeries(ctx, runId, key, range);
  return use(columns, columns.length);
}

/**
 * Reads the summaries of steps in `[from, to]` into `out`, and the points between them
 * (reduced through `scratch`); returns the number of points they stand for.
 */
function loadSummarized(
  db: Database,
  level: SummaryLevel,
  runId: string,
  key: string,
  from: number,
  to: number,
  out: ColumnsBuilder,
  scratch: ColumnsBuilder,
): Promise<number> {
  return limiterOf(db).run(async () => {
    let after = Number.isFinite(from) ? Math.ceil(from) - 1 : -1; // steps are never negative
    const toStep = Number.isFinite(to) ? Math.floor(to) : Infinity;
    let total = 0;
    for (;;) {
      const s = appendSummaries(db, level, runId, key, after, toStep, SUMMARY_CHUNK_BLOCKS, out);
      if (s.blocks === 0) {
        // Points up to the next summary that may be used: read, then reduced like a block.
        scratch.length = 0;
        const chunk = metricBlocks.appendSeriesChunk(
          db,
          runId,
          key,
          after,
          Math.min(toStep, s.next - 1),
          metricBlocks.READ_CHUNK_POINTS,
          scratch,
        );
        if (chunk.added === 0) return total;
        summarizeInto(scratch, 0, scratch.length, out, level.bucket);
        total += chunk.added;
        after = scratch.lastStep();
      } else {
        total += s.points;
        after = s.lastStep;
      }
      await nextTurn();
    }
  });
}

/**
 * Columns kept for the next summary read, so that a query of 20 series, or the next query,
 * writes into memory already touched (first touching fresh memory is what reading costs
 * most on some machines). At most a few MB are kept.
 */
const spareColumns: ColumnsBuilder[] = [];
const MAX_SPARE_COLUMNS = 2 * MAX_CONCURRENT_SERIES_LOADS;
const MAX_SPARE_POINTS = 1 << 17;

function takeColumns(points: number): ColumnsBuilder {
  const c = spareColumns.pop() ?? new metricBlocks.ColumnsBuilder(points);
  c.length = 0;
  c.reserve(points);
  return c;
}

function giveBack(c: ColumnsBuilder): void {
  if (spareColumns.length < MAX_SPARE_COLUMNS && c.steps.length <= MAX_SPARE_POINTS) {
    spareColumns.push(c);
  }
}
