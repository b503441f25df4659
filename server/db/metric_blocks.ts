/**
 * Sealed blocks of a series: `BLOCK_POINTS` consecutive points (by step) packed as three
 * float64 columns in one blob. Reading a million rows out of SQLite costs about a second;
 * reading the same points as 245 blobs costs tens of milliseconds. Rows in `metric_points`
 * remain the record: blocks are a copy, written in the background as series grow (see
 * `BlockSealer`), and dropped from the first step a later write touches (a rewrite or an
 * out-of-order point).
 */
import type { Database } from "./database.ts";
import { allAsArrays } from "./_rows.ts";

/** Points in one sealed block. */
export const BLOCK_POINTS = 4096;

/** A whole series in columns; only the first `length` entries are meaningful. */
export interface SeriesColumns {
  steps: Float64Array;
  values: Float64Array;
  wallTimes: Float64Array;
  length: number;
}

interface Seal {
  sealed_step: number;
  sealed_points: number;
}

// Blobs hold the host's float64 layout; every platform Deno ships for is little-endian.
if (new Uint8Array(new Float64Array([1]).buffer)[7] !== 0x3f) {
  throw new Error("metric blocks assume a little-endian host");
}

function getSeal(db: Database, runId: string, key: string): Seal | undefined {
  return db.prepare(
    "SELECT sealed_step, sealed_points FROM metric_seals WHERE run_id = ? AND key = ?",
  ).get(runId, key) as Seal | undefined;
}

/**
 * The whole series: its sealed blocks, then its rows after the last sealed step. Blocks
 * that disagree with their seal (which only a damaged file could cause) are dropped and the
 * rows read instead.
 */
export function readSeriesColumns(db: Database, runId: string, key: string): SeriesColumns {
  let seal = getSeal(db, runId, key);
  let blocks: { points: number; data: Uint8Array }[] = [];
  if (seal) {
    blocks = db.prepare(
      "SELECT points, data FROM metric_blocks WHERE run_id = ? AND key = ? ORDER BY first_step",
    ).all(runId, key) as unknown as typeof blocks;
    const held = blocks.reduce((n, b) => n + b.points, 0);
    if (held !== seal.sealed_points || blocks.some((b) => b.data.length !== b.points * 24)) {
      try {
        dropBlocksFrom(db, runId, key, -Infinity);
      } catch {
        // Cannot write now (a full disk): the rows answer this read all the same.
      }
      seal = undefined;
      blocks = [];
    }
  }
  const tail = readRowsAfter(db, runId, key, seal?.sealed_step ?? -1);
  const length = (seal?.sealed_points ?? 0) + tail.length;
  const out: SeriesColumns = {
    steps: new Float64Array(length),
    values: new Float64Array(length),
    wallTimes: new Float64Array(length),
    length,
  };
  let at = 0;
  for (const { points: n, data } of blocks) {
    const bytes = data.byteOffset % 8 === 0 ? data : data.slice();
    const f = new Float64Array(bytes.buffer, bytes.byteOffset, 3 * n);
    out.steps.set(f.subarray(0, n), at);
    out.values.set(f.subarray(n, 2 * n), at);
    out.wallTimes.set(f.subarray(2 * n, 3 * n), at);
    at += n;
  }
  for (const [step, value, wallTime] of tail) {
    out.steps[at] = step;
    out.values[at] = value === null ? NaN : value; // SQLite stores NaN as NULL
    out.wallTimes[at] = wallTime;
    at++;
  }
  return out;
}

function readRowsAfter(
  db: Database,
  runId: string,
  key: string,
  afterStep: number,
): [number, number | null, number][] {
  return allAsArrays(
    db.prepare(
      "SELECT step, value, wall_time FROM metric_points WHERE run_id = ? AND key = ? AND step > ? ORDER BY step",
    ),
    [runId, key, afterStep],
  );
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
  }
  db.prepare(
    `INSERT INTO metric_seals (run_id, key, sealed_step, sealed_points) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id, key) DO UPDATE SET sealed_step = excluded.sealed_step,
       sealed_points = excluded.sealed_points`,
  ).run(runId, key, columns.steps[columns.length - 1], sealedBefore + columns.length);
}

/**
 * Called for every write: drops the sealed blocks a write at `minStep` or later falls into,
 * so that blocks never disagree with the rows. Must run inside the write's transaction.
 */
export function invalidateBlocks(db: Database, runId: string, key: string, minStep: number): void {
  const seal = getSeal(db, runId, key);
  if (seal && minStep <= seal.sealed_step) dropBlocksFrom(db, runId, key, minStep);
}

function dropBlocksFrom(db: Database, runId: string, key: string, step: number): void {
  db.tx(() => {
    db.prepare("DELETE FROM metric_blocks WHERE run_id = ? AND key = ? AND last_step >= ?").run(
      runId,
      key,
      Number.isFinite(step) ? step : Number.MIN_SAFE_INTEGER,
    );
    const left = db.prepare(
      "SELECT MAX(last_step) AS step, SUM(points) AS points FROM metric_blocks WHERE run_id = ? AND key = ?",
    ).get(runId, key) as { step: number | null; points: number | null };
    if (left.step === null) {
      db.prepare("DELETE FROM metric_seals WHERE run_id = ? AND key = ?").run(runId, key);
    } else {
      db.prepare(
        "UPDATE metric_seals SET sealed_step = ?, sealed_points = ? WHERE run_id = ? AND key = ?",
      ).run(left.step, left.points, runId, key);
    }
  });
}
