/**
 * Block summaries: for each sealed block, the points of it a downsampled chart needs (see
 * `summarize.ts`: the lowest and highest value of every 32 points, or of every 256 in the
 * coarse summary, the first NaN, +Infinity and -Infinity among them, and the block's first
 * and last point), at most a sixteenth (a 128th) of its points for finite values. A chart of
 * a long series that is not in memory reads these instead of the blocks: a million points
 * are about 1.5 MB of fine summaries, 200 KB of coarse ones, instead of 24 MB of blocks.
 * Summaries are written with their block, dropped with it, and kept for the same steps; a
 * store sealed before summaries existed has them added in the background (`summarizeNext`),
 * and reads use blocks where a summary is missing.
 */
import type { Database } from "./database.ts";
import {
  BLOCK_POINTS,
  ColumnsBuilder,
  getSeal,
  insertSummary,
  type SeriesColumns,
} from "./metric_blocks.ts";
import { summarizeInto, SUMMARY_LEVELS, type SummaryLevel } from "./summarize.ts";

export { summarizeInto, SUMMARY_BUCKET, SUMMARY_LEVELS, type SummaryLevel } from "./summarize.ts";

interface SummaryRow {
  first_step: number;
  last_step: number;
  points: number;
  kept: number;
  data: Uint8Array;
}

/**
 * Raw points in `[fromStep, toStep]` that summaries stand for (whole blocks inside the
 * range), and raw points in it past the seal counted up to `tailLimit`. Without a range
 * (the whole series), summaries count only when every sealed block has one: until then a
 * whole series is read exactly, and kept in memory.
 */
export function summaryCoverage(
  db: Database,
  runId: string,
  key: string,
  range: { from: number; to: number } | undefined,
  tailLimit: number,
): { summarized: number; tail: number } {
  const seal = getSeal(db, runId, key);
  if (!range) {
    const row = db.prepare("SELECT points FROM metric_keys WHERE run_id = ? AND key = ?")
      .get(runId, key) as { points: number } | undefined;
    const points = row?.points ?? 0;
    if (!seal || seal.summarized_step !== seal.sealed_step) return { summarized: 0, tail: points };
    return { summarized: seal.sealed_points, tail: Math.max(0, points - seal.sealed_points) };
  }
  const from = Number.isFinite(range.from) ? range.from : Number.MIN_SAFE_INTEGER;
  const to = Number.isFinite(range.to) ? range.to : Number.MAX_SAFE_INTEGER;
  const summarized = seal
    ? (db.prepare(
      `SELECT COALESCE(SUM(points), 0) AS n FROM metric_summaries
       WHERE run_id = ? AND key = ? AND first_step >= ? AND first_step <= ? AND last_step <= ?`,
    ).get(runId, key, from, to, to) as { n: number }).n
    : 0;
  const after = Math.max(seal?.sealed_step ?? -1, Math.ceil(from) - 1);
  const tail = (db.prepare(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM metric_points
       WHERE run_id = ? AND key = ? AND step > ? AND step <= ? LIMIT ?)`,
  ).get(runId, key, after, to, tailLimit) as { n: number }).n;
  return { summarized, tail };
}

/**
 * Appends to `out` the summaries of at most `maxBlocks` consecutive sealed blocks that lie
 * wholly in `(afterStep, toStep]`, starting with the block right after `afterStep`. A
 * summary is used only when no row lies between the previous point and its block (so a
 * block without a summary, a read that starts inside a block, or the unsealed tail stops
 * it): `next` is then the first step from which a summary may be used again (Infinity:
 * none in range). Returns the raw points the summaries stand for and the last step they
 * cover. Up to `summarized_step` every block has its summary, so there only the first
 * summary is checked against the rows (an index look-up each, a fifth of a summary's cost).
 */
export function appendSummaries(
  db: Database,
  level: SummaryLevel,
  runId: string,
  key: string,
  afterStep: number,
  toStep: number,
  maxBlocks: number,
  out: ColumnsBuilder,
): { blocks: number; points: number; lastStep: number; next: number } {
  const to = Number.isFinite(toStep) ? toStep : Number.MAX_SAFE_INTEGER;
  const whole = getSeal(db, runId, key)?.summarized_step ?? -Infinity;
  const rows = db.prepare(
    `SELECT first_step, last_step, points, kept, data FROM ${level.table}
     WHERE run_id = ? AND key = ? AND first_step > ? AND first_step <= ?
     ORDER BY first_step LIMIT ?`,
  ).all(runId, key, afterStep, to, maxBlocks) as unknown as SummaryRow[];
  const gap = db.prepare(
    "SELECT 1 FROM metric_points WHERE run_id = ? AND key = ? AND step > ? AND step < ? LIMIT 1",
  );
  let prev = afterStep;
  let blocks = 0;
  let points = 0;
  let next = Infinity;
  for (const r of rows) {
    if (r.first_step <= prev || r.last_step > to || r.data.length !== r.kept * 24) {
      // Past the range, or damaged: read from its block. The summary after it may be used.
      next = r.first_step <= prev ? Infinity : r.last_step + 1;
      break;
    }
    if ((blocks === 0 || r.last_step > whole) && gap.get(runId, key, prev, r.first_step)) {
      next = r.first_step;
      break;
    }
    const bytes = r.data.byteOffset % 8 === 0 ? r.data : r.data.slice();
    const f = new Float64Array(bytes.buffer, bytes.byteOffset, 3 * r.kept);
    out.reserve(r.kept);
    out.steps.set(f.subarray(0, r.kept), out.length);
    out.values.set(f.subarray(r.kept, 2 * r.kept), out.length);
    out.wallTimes.set(f.subarray(2 * r.kept, 3 * r.kept), out.length);
    out.length += r.kept;
    blocks++;
    points += r.points;
    prev = r.last_step;
  }
  return { blocks, points, lastStep: prev, next };
}

/**
 * Summarises up to `maxBlocks` sealed blocks of a series that have none yet (a store sealed
 * before summaries existed), from the oldest, and moves `summarized_step` past them (to the
 * seal when none is left). Returns the number of blocks read.
 */
export function summarizeNext(db: Database, runId: string, key: string, maxBlocks: number): number {
  return db.tx(() => {
    const seal = getSeal(db, runId, key);
    if (!seal || seal.summarized_step === seal.sealed_step || maxBlocks <= 0) return 0;
    const after = seal.summarized_step ?? Number.MIN_SAFE_INTEGER;
    const blocks = db.prepare(
      `SELECT first_step, last_step, points, data FROM metric_blocks
       WHERE run_id = ? AND key = ? AND first_step > ? ORDER BY first_step LIMIT ?`,
    ).all(runId, key, after, maxBlocks) as unknown as Omit<SummaryRow, "kept">[];
    const summary = new ColumnsBuilder(BLOCK_POINTS);
    for (const b of blocks) {
      // A damaged block gets no summary: reads of it keep using the rows.
      if (b.data.length !== b.points * 24) continue;
      const bytes = b.data.byteOffset % 8 === 0 ? b.data : b.data.slice();
      const f = new Float64Array(bytes.buffer, bytes.byteOffset, 3 * b.points);
      const block: SeriesColumns = {
        steps: f.subarray(0, b.points),
        values: f.subarray(b.points, 2 * b.points),
        wallTimes: f.subarray(2 * b.points, 3 * b.points),
        length: b.points,
      };
      for (const level of SUMMARY_LEVELS) {
        summary.length = 0;
        summarizeInto(block, 0, b.points, summary, level.bucket);
        insertSummary(db, level, runId, key, b.first_step, b.last_step, b.points, summary);
      }
    }
    const done = blocks.length < maxBlocks
      ? seal.sealed_step
      : Math.min(blocks[blocks.length - 1].last_step, seal.sealed_step);
    db.prepare("UPDATE metric_seals SET summarized_step = ? WHERE run_id = ? AND key = ?").run(
      done,
      runId,
      key,
    );
    return blocks.length;
  });
}

/** Sealed series with blocks still to summarise (a store sealed by an older version). */
export function seriesToSummarize(db: Database, limit: number): { run_id: string; key: string }[] {
  return db.prepare(
    `SELECT run_id, key FROM metric_seals
     WHERE summarized_step IS NULL OR summarized_step < sealed_step LIMIT ?`,
  ).all(limit) as { run_id: string; key: string }[];
}
