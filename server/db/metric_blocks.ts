/**
 * Sealed blocks of a series: `BLOCK_POINTS` consecutive points (by step) packed as three
 * float64 columns in one blob. Reading a million rows out of SQLite costs about a second;
 * reading the same points as 245 blobs costs tens of milliseconds. Rows in `metric_points`
 * remain the record: blocks are a copy, written in the background as series grow (see
 * `BlockSealer`), and dropped from the first step a later write touches (a rewrite or an
 * out-of-order point). Each block is sealed with its summary (`metric_summaries.ts`), which
 * is written and dropped with it.
 */
import type { Database } from "./database.ts";
import { allAsArrays } from "./_rows.ts";
import { summarizeInto, SUMMARY_LEVELS, type SummaryLevel } from "./summarize.ts";

/** Points in one sealed block. */
export const BLOCK_POINTS = 4096;

/** A whole series in columns; only the first `length` entries are meaningful. */
export interface SeriesColumns {
  steps: Float64Array;
  values: Float64Array;
  wallTimes: Float64Array;
  length: number;
}

/** A chunk of a series, and how many of its points came from sealed blocks. */
export interface SeriesChunk extends SeriesColumns {
  fromBlocks: number;
}

interface Seal {
  sealed_step: number;
  sealed_points: number;
  /** Every block up to this step has its summary (null: none yet, see migration 12). */
  summarized_step: number | null;
}

// Blobs hold the host's float64 layout; every platform Deno ships for is little-endian.
if (new Uint8Array(new Float64Array([1]).buffer)[7] !== 0x3f) {
  throw new Error("metric blocks assume a little-endian host");
}

export function getSeal(db: Database, runId: string, key: string): Seal | undefined {
  return db.prepare(
    "SELECT sealed_step, sealed_points, summarized_step FROM metric_seals WHERE run_id = ? AND key = ?",
  ).get(runId, key) as Seal | undefined;
}

/** How far a series was sealed when a read began, to check what the read found against. */
export type SealMark = Seal | undefined;

/** The seal before a whole read (see `afterWholeRead`). */
export function sealMark(db: Database, runId: string, key: string): SealMark {
  return getSeal(db, runId, key);
}

/**
 * After a whole read that began at `mark` and took `fromBlocks` points from blocks: blocks
 * that disagree with their seal (which only a damaged file could cause; the read used the
 * rows in their place) are dropped, to be sealed again. A seal that moved during the read
 * (the sealer or a write ran in between) proves nothing and is left alone.
 */
export function afterWholeRead(
  db: Database,
  runId: string,
  key: string,
  mark: SealMark,
  fromBlocks: number,
): void {
  if (!mark || fromBlocks === mark.sealed_points) return;
  const now = getSeal(db, runId, key);
  if (now?.sealed_step !== mark.sealed_step || now.sealed_points !== mark.sealed_points) return;
  try {
    dropBlocksFrom(db, runId, key, -Infinity);
  } catch {
    // Cannot write now (a full disk): reads keep checking each block and use the rows.
  }
}

/** Columns that grow as chunks of a series are appended (amortised doubling). */
export class ColumnsBuilder {
  steps: Float64Array;
  values: Float64Array;
  wallTimes: Float64Array;
  length = 0;

  constructor(capacity: number) {
    const n = Math.max(16, capacity);
    this.steps = new Float64Array(n);
    this.values = new Float64Array(n);
    this.wallTimes = new Float64Array(n);
  }

  /** Room for `more` points past `length`. */
  reserve(more: number): void {
    const need = this.length + more;
    if (need <= this.steps.length) return;
    const capacity = Math.max(need, this.steps.length * 2);
    const grow = (a: Float64Array) => {
      const b = new Float64Array(capacity);
      b.set(a.subarray(0, this.length));
      return b;
    };
    this.steps = grow(this.steps);
    this.values = grow(this.values);
    this.wallTimes = grow(this.wallTimes);
  }

  append(c: SeriesColumns): void {
    this.reserve(c.length);
    this.steps.set(c.steps.subarray(0, c.length), this.length);
    this.values.set(c.values.subarray(0, c.length), this.length);
    this.wallTimes.set(c.wallTimes.subarray(0, c.length), this.length);
    this.length += c.length;
  }

  /** The last step appended (NaN when empty). */
  lastStep(): number {
    return this.length > 0 ? this.steps[this.length - 1] : NaN;
  }

  columns(): SeriesColumns {
    return {
      steps: this.steps,
      values: this.values,
      wallTimes: this.wallTimes,
      length: this.length,
    };
  }
}

/** The whole series: its sealed blocks, then its rows after the last sealed step. */
export function readSeriesColumns(db: Database, runId: string, key: string): SeriesColumns {
  const mark = sealMark(db, runId, key);
  const out = new ColumnsBuilder(expectedPoints(db, runId, key));
  let after = -1;
  let fromBlocks = 0;
  for (;;) {
    const chunk = appendSeriesChunk(db, runId, key, after, Infinity, READ_CHUNK_POINTS, out);
    if (chunk.added === 0) {
      afterWholeRead(db, runId, key, mark, fromBlocks);
      return out.columns();
    }
    fromBlocks += chunk.fromBlocks;
    after = out.lastStep();
  }
}

/** The points a series had when last written (its summary), to size the columns once. */
export function expectedPoints(db: Database, runId: string, key: string): number {
  const row = db.prepare("SELECT points FROM metric_keys WHERE run_id = ? AND key = ?").get(
    runId,
    key,
  ) as { points: number } | undefined;
  return row?.points ?? 0;
}

/** Points read in one synchronous step of a long read (about 50 ms of rows). */
export const READ_CHUNK_POINTS = 65_536;

/**
 * At most `maxPoints` points of a series with `afterStep < step <= toStep`, in step order
 * (see `appendSeriesChunk`), in columns of their own.
 */
export function readSeriesChunk(
  db: Database,
  runId: string,
  key: string,
  afterStep: number,
  toStep: number,
  maxPoints: number,
): SeriesChunk {
  const out = new ColumnsBuilder(0);
  const { fromBlocks } = appendSeriesChunk(db, runId, key, afterStep, toStep, maxPoints, out);
  return { ...out.columns(), fromBlocks };
}

/**
 * Appends to `out` at most `maxPoints` points of a series with `afterStep < step <= toStep`,
 * in step order: from sealed blocks where they cover the range, else from rows. A block is
 * used only when no row lies between the previous point and its first step, so a missing or
 * damaged block, or one that starts before `afterStep`, is read from the rows instead. Each
 * call is one consistent read; long reads call it again from the last step appended (and
 * may let other work run in between). Points go straight into `out`'s columns: a whole
 * series is copied once, not once per chunk and again into the result (fresh memory is
 * what a long read costs most on a machine where first touching a page is slow).
 */
export function appendSeriesChunk(
  db: Database,
  runId: string,
  key: string,
  afterStep: number,
  toStep: number,
  maxPoints: number,
  out: ColumnsBuilder,
): { added: number; fromBlocks: number } {
  const seal = getSeal(db, runId, key);
  const to = Number.isFinite(toStep) ? toStep : Number.MAX_SAFE_INTEGER;
  if (maxPoints <= 0 || afterStep >= to) return { added: 0, fromBlocks: 0 };
  let blocks: Block[] = [];
  // Rows end before this step: the next block, where only rows before it kept it from use.
  let rowsTo = to;
  if (seal && afterStep < seal.sealed_step && maxPoints >= BLOCK_POINTS) {
    blocks = db.prepare(
      `SELECT first_step, last_step, points, data FROM metric_blocks
       WHERE run_id = ? AND key = ? AND first_step > ? AND first_step <= ?
       ORDER BY first_step LIMIT ?`,
    ).all(runId, key, afterStep, to, Math.floor(maxPoints / BLOCK_POINTS)) as unknown as Block[];
    const gap = db.prepare(
      "SELECT 1 FROM metric_points WHERE run_id = ? AND key = ? AND step > ? AND step < ? LIMIT 1",
    );
    let prev = afterStep;
    let usable = 0;
    for (const b of blocks) {
      if (b.first_step <= prev || b.data.length !== b.points * 24) break;
      if (gap.get(runId, key, prev, b.first_step)) {
        // A read that starts inside a block: its rows up to the next block, then blocks.
        if (usable === 0) rowsTo = b.first_step - 1;
        break;
      }
      usable++;
      prev = b.last_step;
    }
    blocks = blocks.slice(0, usable);
  }
  const start = out.length;
  if (blocks.length === 0) {
    // Rows up to the next block that may be usable (at most one block's worth).
    const rows = allAsArrays<[number, number | null, number]>(
      db.prepare(
        "SELECT step, value, wall_time FROM metric_points WHERE run_id = ? AND key = ? AND step > ? AND step <= ? ORDER BY step LIMIT ?",
      ),
      [
        runId,
        key,
        afterStep,
        rowsTo,
        Math.min(maxPoints, seal && afterStep < seal.sealed_step ? BLOCK_POINTS : maxPoints),
      ],
    );
    const n = rows.length;
    out.reserve(n);
    for (let i = 0; i < n; i++) {
      const [step, value, wallTime] = rows[i];
      out.steps[start + i] = step;
      out.values[start + i] = value === null ? NaN : value; // SQLite stores NaN as NULL
      out.wallTimes[start + i] = wallTime;
    }
    out.length = start + n;
    return { added: n, fromBlocks: 0 };
  }
  out.reserve(blocks.reduce((sum, b) => sum + b.points, 0));
  let at = start;
  for (const { points, data } of blocks) {
    const bytes = data.byteOffset % 8 === 0 ? data : data.slice();
    const f = new Float64Array(bytes.buffer, bytes.byteOffset, 3 * points);
    out.steps.set(f.subarray(0, points), at);
    out.values.set(f.subarray(points, 2 * points), at);
    out.wallTimes.set(f.subarray(2 * points, 3 * points), at);
    at += points;
  }
  // The last block may reach past `toStep`.
  while (at > start && out.steps[at - 1] > to) at--;
  out.length = at;
  return { added: at - start, fromBlocks: at - start };
}

interface Block {
  first_step: number;
  last_step: number;
  points: number;
  data: Uint8Array;
}

/**
 * Seals up to `maxBlocks` whole blocks of a series' oldest unsealed rows, reading only
 * those rows (the background sealer's step). Returns the number of blocks written.
 */
export function sealNext(db: Database, runId: string, key: string, maxBlocks: number): number {
  return db.tx(() => {
    const seal = getSeal(db, runId, key);
    const rows = allAsArrays<[number, number | null, number]>(
      db.prepare(
        "SELECT step, value, wall_time FROM metric_points WHERE run_id = ? AND key = ? AND step > ? ORDER BY step LIMIT ?",
      ),
      [runId, key, seal?.sealed_step ?? -1, maxBlocks * BLOCK_POINTS],
    );
    const blocks = Math.floor(rows.length / BLOCK_POINTS);
    const n = blocks * BLOCK_POINTS;
    const columns: SeriesColumns = {
      steps: new Float64Array(n),
      values: new Float64Array(n),
      wallTimes: new Float64Array(n),
      length: n,
    };
    for (let i = 0; i < n; i++) {
      const [step, value, wallTime] = rows[i];
      columns.steps[i] = step;
      columns.values[i] = value === null ? NaN : value;
      columns.wallTimes[i] = wallTime;
    }
    writeBlocks(db, runId, key, seal?.sealed_points ?? 0, columns);
    return blocks;
  });
}

/** Series with at least one whole block of unsealed points, the most unsealed first. */
export function seriesToSeal(db: Database, limit: number): { run_id: string; key: string }[] {
  return db.prepare(
    // `k.points >= ?` first: the index on points leaves out every short series at once.
    `SELECT k.run_id, k.key FROM metric_keys k
       LEFT JOIN metric_seals s ON s.run_id = k.run_id AND s.key = k.key
     WHERE k.points >= ? AND k.points - COALESCE(s.sealed_points, 0) >= ?
     ORDER BY k.points - COALESCE(s.sealed_points, 0) DESC LIMIT ?`,
  ).all(BLOCK_POINTS, BLOCK_POINTS, limit) as { run_id: string; key: string }[];
}

/**
 * Writes `columns` (whole blocks, the points right after the `sealedBefore` already
 * sealed) as blocks and moves the seal past them. Must run inside a transaction.
 */
function writeBlocks(
  db: Database,
  runId: string,
  key: string,
  sealedBefore: number,
  columns: SeriesColumns,
): void {
  if (columns.length === 0) return;
  const insert = db.prepare(
    "INSERT INTO metric_blocks (run_id, key, first_step, last_step, points, data) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const summary = new ColumnsBuilder(BLOCK_POINTS);
  for (let at = 0; at < columns.length; at += BLOCK_POINTS) {
    const end = at + BLOCK_POINTS;
    const packed = new Float64Array(3 * BLOCK_POINTS);
    packed.set(columns.steps.subarray(at, end), 0);
    packed.set(columns.values.subarray(at, end), BLOCK_POINTS);
    packed.set(columns.wallTimes.subarray(at, end), 2 * BLOCK_POINTS);
    insert.run(
      runId,
      key,
      columns.steps[at],
      columns.steps[end - 1],
      BLOCK_POINTS,
      new Uint8Array(packed.buffer),
    );
    for (const level of SUMMARY_LEVELS) {
      summary.length = 0;
      summarizeInto(columns, at, end, summary, level.bucket);
      const [first, last] = [columns.steps[at], columns.steps[end - 1]];
      insertSummary(db, level, runId, key, first, last, BLOCK_POINTS, summary);
    }
  }
  // The summaries are complete up to the new seal if they were up to the old one (a store
  // sealed before summaries existed is summarised from its start by `summarizeNext`).
  const sealed = columns.steps[columns.length - 1];
  db.prepare(
    `INSERT INTO metric_seals (run_id, key, sealed_step, sealed_points, summarized_step)
     VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (run_id, key) DO UPDATE SET sealed_step = excluded.sealed_step,
       sealed_points = excluded.sealed_points,
       summarized_step = CASE WHEN summarized_step = sealed_step THEN excluded.summarized_step
         ELSE summarized_step END`,
  ).run(runId, key, sealed, sealedBefore + columns.length, sealed);
}

/** Writes (or replaces) the summary at `level` of the block that starts at `firstStep`. */
export function insertSummary(
  db: Database,
  level: SummaryLevel,
  runId: string,
  key: string,
  firstStep: number,
  lastStep: number,
  points: number,
  summary: SeriesColumns,
): void {
  const n = summary.length;
  const packed = new Float64Array(3 * n);
  packed.set(summary.steps.subarray(0, n), 0);
  packed.set(summary.values.subarray(0, n), n);
  packed.set(summary.wallTimes.subarray(0, n), 2 * n);
  db.prepare(
    `INSERT OR REPLACE INTO ${level.table} (run_id, key, first_step, last_step, points, kept, data)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(runId, key, firstStep, lastStep, points, n, new Uint8Array(packed.buffer));
}

/**
 * Called for every write: drops the sealed blocks (and their summaries) a write at `minStep`
 * or later falls into, so that blocks never disagree with the rows. Must run inside the
 * write's transaction.
 */
export function invalidateBlocks(db: Database, runId: string, key: string, minStep: number): void {
  const seal = getSeal(db, runId, key);
  if (seal && minStep <= seal.sealed_step) dropBlocksFrom(db, runId, key, minStep);
}

function dropBlocksFrom(db: Database, runId: string, key: string, step: number): void {
  db.tx(() => {
    const from = Number.isFinite(step) ? step : Number.MIN_SAFE_INTEGER;
    db.prepare("DELETE FROM metric_blocks WHERE run_id = ? AND key = ? AND last_step >= ?").run(
      runId,
      key,
      from,
    );
    for (const { table } of SUMMARY_LEVELS) {
      db.prepare(`DELETE FROM ${table} WHERE run_id = ? AND key = ? AND last_step >= ?`).run(
        runId,
        key,
        from,
      );
    }
    const left = db.prepare(
      "SELECT MAX(last_step) AS step, SUM(points) AS points FROM metric_blocks WHERE run_id = ? AND key = ?",
    ).get(runId, key) as { step: number | null; points: number | null };
    if (left.step === null) {
      db.prepare("DELETE FROM metric_seals WHERE run_id = ? AND key = ?").run(runId, key);
    } else {
      // MIN of NULL is NULL: a series still to be summarised stays so.
      db.prepare(
        `UPDATE metric_seals SET sealed_step = ?1, sealed_points = ?2,
           summarized_step = MIN(summarized_step, ?1) WHERE run_id = ?3 AND key = ?4`,
      ).run(left.step, left.points, runId, key);
    }
  });
}
