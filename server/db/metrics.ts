/**
 * Metric points and per-key summaries: points stored (the last write per step wins), series
 * read in columns, points read after a write sequence, and each key's counts and extremes.
 */
import type { Database } from "./database.ts";
import { allAsArrays } from "./_rows.ts";
import { invalidateBlocks } from "./metric_blocks.ts";

/** One point to store; `value` may be NaN or ±Infinity. */
export interface PointWrite {
  key: string;
  step: number;
  value: number;
  wall_time: number;
}

/** A stored point with the global write sequence that orders live delivery. */
export interface StoredPoint extends PointWrite {
  seq: number;
}

/** Per run and key: counts, last value and extremes, kept up to date by `writePoints`. */
export interface KeySummary {
  key: string;
  points: number;
  first_step: number;
  last_step: number;
  last_value: number;
  last_wall_time: number;
  min_value: number | null;
  min_step: number | null;
  max_value: number | null;
  max_step: number | null;
}

// SQLite stores NaN as NULL; NULL in a value column therefore means NaN.
const fromSql = (v: number | null): number => v === null ? NaN : v;

/**
 * The points with, for each key and step, only the last one of the batch (the same rule as
 * across batches). Batches almost always have rising steps per key; that case is checked
 * without building keys and returns the batch as it is.
 */
export function lastWritePerStep(points: PointWrite[]): PointWrite[] {
  const lastStep = new Map<string, number>();
  let rising = true;
  for (const p of points) {
    const prev = lastStep.get(p.key);
    if (prev !== undefined && p.step <= prev) {
      rising = false;
      break;
    }
    lastStep.set(p.key, p.step);
  }
  if (rising) return points;
  const map = new Map<string, PointWrite>();
  for (const p of points) {
    const id = `${p.step}\u0000${p.key}`;
    map.delete(id); // re-inserted at the end: stored in the order of the last write
    map.set(id, p);
  }
  return [...map.values()];
}

/**
 * Stores points of one run (newest write wins for the same key and step) and returns them
 * with their sequence numbers. Must run inside `db.tx`.
 */
/** How many metric keys a run has. */
export function keyCount(db: Database, runId: string): number {
  return (db.prepare("SELECT COUNT(*) AS n FROM metric_keys WHERE run_id = ?").get(runId) as {
    n: number;
  }).n;
}

/** Whether a run has this metric key. */
export function hasKey(db: Database, runId: string, key: string): boolean {
  return db.prepare("SELECT 1 FROM metric_keys WHERE run_id = ? AND key = ?").get(runId, key) !==
    undefined;
}

/**
 * State a write transaction keeps in memory and writes once, just before its COMMIT: the point
 * sequence's next value and the summaries of keys that already had one. A transaction that
 * stores many batches (the gateway's group commit) so pays for them once, not per batch.
 * Rolled back with the transaction or savepoint that changed it.
 */
interface TxState {
  /** The sequence's value as this transaction has it; null until read in it. */
  seq: number | null;
  /** The sequence's stored value, when read. */
  seqStored: number;
  /** Summaries changed in this transaction and not yet written, by run and key. */
  summaries: Map<string, HeldSummary>;
}

/** A key's summary with the sequence number of its newest write, as kept in `metric_keys`. */
interface HeldSummary {
  runId: string;
  summary: KeySummary;
  lastSeq: number;
}

const txStates = new WeakMap<Database, TxState>();

function txState(db: Database): TxState {
  let st = txStates.get(db);
  if (!st) {
    const fresh: TxState = { seq: null, seqStored: 0, summaries: new Map() };
    txStates.set(db, st = fresh);
    db.beforeCommit(() => {
      if (fresh.seq !== null && fresh.seq !== fresh.seqStored) {
        db.prepare("UPDATE sequences SET value = ? WHERE name = 'metric_points'").run(fresh.seq);
      }
      for (const held of fresh.summaries.values()) saveSummary(db, held);
      // Cleared here: a COMMIT that then fails rolls these back through the undo callbacks.
      const seq = fresh.seq;
      const summaries = fresh.summaries;
      db.onRollback(() => {
        fresh.seq = seq;
        fresh.summaries = summaries;
      });
      fresh.seq = null;
      fresh.summaries = new Map();
    });
  }
  return st;
}

/** Takes `n` values of the point sequence; returns the one before the first. */
function takeSeqs(db: Database, n: number): number {
  const st = txState(db);
  if (!db.sqlite.isTransaction) {
    const row = db.prepare(
      "UPDATE sequences SET value = value + ? WHERE name = 'metric_points' RETURNING value",
    ).get(n) as { value: number };
    return row.value - n;
  }
  if (st.seq === null) {
    const row = db.prepare("SELECT value FROM sequences WHERE name = 'metric_points'").get() as {
      value: number;
    };
    st.seqStored = row.value;
    st.seq = row.value;
    db.onRollback(() => st.seq = null);
  }
  const before = st.seq;
  st.seq = before + n;
  db.onRollback(() => st.seq = before);
  return before;
}

/** Points one INSERT statement of `writePoints` writes at most, and the values of each. */
const UPSERT_ROWS = 64;
const UPSERT_COLUMNS = 6;

/** The statement that writes `rows` points (one a row; none of them twice, see `lastWritePerStep`). */
function upsertPoints(db: Database, rows: number) {
  const sql = upsertSql[rows] ??=
    `INSERT INTO metric_points (run_id, key, step, value, wall_time, seq)
     VALUES ${"(?, ?, ?, ?, ?, ?), ".repeat(rows - 1)}(?, ?, ?, ?, ?, ?)
     ON CONFLICT (run_id, key, step) DO UPDATE SET value = excluded.value,
       wall_time = excluded.wall_time, seq = excluded.seq`;
  return db.prepare(sql);
}
const upsertSql: string[] = [];

/**
 * Writes the points gathered in `byKey`, key by key in rising steps (the order of the primary
 * key), in statements of up to UPSERT_ROWS rows: one call into SQLite a statement instead of one
 * a point. In key order a statement's rows land next to each other in the B-tree (in write
 * order, with several keys interleaved, a many-row statement measured slower than one row a
 * statement). Each (key, step) is there once, so the order changes nothing stored.
 */
function upsertRows(db: Database, runId: string, byKey: Map<string, KeyAdds>): void {
  const args: (string | number | null)[] = [];
  for (const a of byKey.values()) {
    const rows = a.rising ? a.rows : a.rows.slice().sort((x, y) => x.step - y.step);
    for (const p of rows) {
      args.push(runId, p.key, p.step, Number.isNaN(p.value) ? null : p.value, p.wall_time, p.seq);
      if (args.length === UPSERT_ROWS * UPSERT_COLUMNS) {
        upsertPoints(db, UPSERT_ROWS).run(...args);
        args.length = 0;
      }
    }
  }
  if (args.length > 0) upsertPoints(db, args.length / UPSERT_COLUMNS).run(...args);
}

export function writePoints(db: Database, runId: string, points: PointWrite[]): StoredPoint[] {
  if (points.length === 0) return [];
  const unique = lastWritePerStep(points);
  let seq = takeSeqs(db, unique.length);
  const stored: StoredPoint[] = new Array(unique.length);
  const byKey = new Map<string, KeyAdds>();
  for (let i = 0; i < unique.length; i++) {
    const p = unique[i];
    const sp: StoredPoint = {
      key: p.key,
      step: p.step,
      value: p.value,
      wall_time: p.wall_time,
      seq: ++seq,
    };
    stored[i] = sp;
    const a = byKey.get(p.key);
    if (a) addPoint(a, sp);
    else byKey.set(p.key, newKeyAdds(sp));
  }
  upsertRows(db, runId, byKey);
  for (const [key, a] of byKey) {
    invalidateBlocks(db, runId, key, a.minStep);
    const appended = updateSummary(db, runId, key, a);
    // Anything but steps rising above the key's last step is listed, so that a resume knows
    // where else than above its last step a newer point may be (see `pointsAfter`).
    if (!appended || !a.rising) {
      db.prepare("INSERT INTO metric_rewrites (run_id, key, seq, min_step) VALUES (?, ?, ?, ?)")
        .run(runId, key, a.lastSeq, a.minStep);
    }
  }
  return stored;
}

/** What one batch adds to one key, gathered as its points are stored (in write order). */
interface KeyAdds {
  points: number;
  /** The key's points, in write order. */
  rows: StoredPoint[];
  minStep: number;
  /** Whether each step is above the one written before it in the batch. */
  rising: boolean;
  /** The point written last, the one with the highest step, and the finite extremes. */
  last: StoredPoint;
  top: StoredPoint;
  min: StoredPoint | null;
  max: StoredPoint | null;
  lastSeq: number;
}

function newKeyAdds(p: StoredPoint): KeyAdds {
  const finite = Number.isFinite(p.value);
  return {
    points: 1,
    rows: [p],
    minStep: p.step,
    rising: true,
    last: p,
    top: p,
    min: finite ? p : null,
    max: finite ? p : null,
    lastSeq: p.seq,
  };
}

function addPoint(a: KeyAdds, p: StoredPoint): void {
  a.points++;
  a.rows.push(p);
  if (p.step < a.minStep) a.minStep = p.step;
  if (p.step <= a.last.step) a.rising = false;
  if (p.step > a.top.step) a.top = p;
  if (Number.isFinite(p.value)) {
    if (a.min === null || p.value < a.min.value) a.min = p;
    if (a.max === null || p.value > a.max.value) a.max = p;
  }
  a.last = p;
  a.lastSeq = p.seq;
}

/** Returns whether every added step lies above the key's last step before them. */
function updateSummary(db: Database, runId: string, key: string, a: KeyAdds): boolean {
  const old = getKeySummary(db, runId, key);
  if (old && a.minStep <= old.last_step) {
    // A rewrite or an out-of-order step: extremes may have moved, so recount from the points.
    flushSummary(db, runId, key);
    recomputeSummary(db, runId, key, a.lastSeq);
    return false;
  }
  // Every added step is above the old last step: the highest is the new last one, and an
  // extreme moves only to a strictly lower (higher) value, as if added one by one.
  const s: KeySummary = {
    key,
    points: (old?.points ?? 0) + a.points,
    first_step: old?.first_step ?? a.minStep,
    last_step: a.top.step,
    last_value: a.top.value,
    last_wall_time: a.top.wall_time,
    min_value: old?.min_value ?? null,
    min_step: old?.min_step ?? null,
    max_value: old?.max_value ?? null,
    max_step: old?.max_step ?? null,
  };
  if (a.min && (s.min_value === null || a.min.value < s.min_value)) {
    s.min_value = a.min.value;
    s.min_step = a.min.step;
  }
  if (a.max && (s.max_value === null || a.max.value > s.max_value)) {
    s.max_value = a.max.value;
    s.max_step = a.max.step;
  }
  // A new key's row is written at once (key counts and lists read the table); a known key's
  // summary is written once, before the commit.
  const held = { runId, summary: s, lastSeq: a.lastSeq };
  if (!old || !db.sqlite.isTransaction) saveSummary(db, held);
  else keepSummary(db, held);
  return true;
}

const summaryId = (runId: string, key: string) => `${runId}\u0000${key}`;

/** Holds a known key's new summary until the transaction commits. */
function keepSummary(db: Database, held: HeldSummary): void {
  const map = txState(db).summaries;
  const id = summaryId(held.runId, held.summary.key);
  const prev = map.get(id);
  db.onRollback(() => prev ? map.set(id, prev) : map.delete(id));
  map.set(id, held);
}

/** Writes a held summary of this key now (before a query reads the table). */
function flushSummary(db: Database, runId: string, key: string): void {
  const map = txStates.get(db)?.summaries;
  const id = summaryId(runId, key);
  const held = map?.get(id);
  if (!map || !held) return;
  saveSummary(db, held);
  map.delete(id);
  db.onRollback(() => map.set(id, held));
}

function recomputeSummary(db: Database, runId: string, key: string, lastSeq: number): void {
  const agg = db.prepare(
    "SELECT COUNT(*) AS n, MIN(step) AS first_step, MAX(step) AS last_step FROM metric_points WHERE run_id = ? AND key = ?",
  ).get(runId, key) as { n: number; first_step: number; last_step: number };
  const last = db.prepare(
    "SELECT value, wall_time FROM metric_points WHERE run_id = ? AND key = ? AND step = ?",
  ).get(runId, key, agg.last_step) as { value: number | null; wall_time: number };
  const extreme = (order: "ASC" | "DESC") =>
    db.prepare(
      `SELECT step, value FROM metric_points WHERE run_id = ? AND key = ? AND value IS NOT NULL
         AND value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308
       ORDER BY value ${order}, step LIMIT 1`,
    ).get(runId, key) as { step: number; value: number } | undefined;
  const lo = extreme("ASC");
  const hi = extreme("DESC");
  const summary: KeySummary = {
    key,
    points: agg.n,
    first_step: agg.first_step,
    last_step: agg.last_step,
    last_value: fromSql(last.value),
    last_wall_time: last.wall_time,
    min_value: lo?.value ?? null,
    min_step: lo?.step ?? null,
    max_value: hi?.value ?? null,
    max_step: hi?.step ?? null,
  };
  saveSummary(db, { runId, summary, lastSeq });
}

function saveSummary(db: Database, { runId, summary: s, lastSeq }: HeldSummary): void {
  db.prepare(
    `INSERT INTO metric_keys (run_id, key, points, first_step, last_step, last_value,
       last_wall_time, min_value, min_step, max_value, max_step, last_seq)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (run_id, key) DO UPDATE SET points = excluded.points,
       first_step = excluded.first_step, last_step = excluded.last_step,
       last_value = excluded.last_value, last_wall_time = excluded.last_wall_time,
       min_value = excluded.min_value, min_step = excluded.min_step,
       max_value = excluded.max_value, max_step = excluded.max_step,
       last_seq = excluded.last_seq`,
  ).run(
    runId,
    s.key,
    s.points,
    s.first_step,
    s.last_step,
    Number.isNaN(s.last_value) ? null : s.last_value,
    s.last_wall_time,
    s.min_value,
    s.min_step,
    s.max_value,
    s.max_step,
    lastSeq,
  );
}

/** The columns of a `KeySummary`. */
const SUMMARY_COLUMNS = "key, points, first_step, last_step, last_value, last_wall_time, " +
  "min_value, min_step, max_value, max_step";

interface SummaryRow extends Omit<KeySummary, "last_value"> {
  last_value: number | null;
}

export function getKeySummary(db: Database, runId: string, key: string): KeySummary | null {
  const held = txStates.get(db)?.summaries.get(summaryId(runId, key));
  if (held) return held.summary;
  const row = db.prepare(`SELECT ${SUMMARY_COLUMNS} FROM metric_keys WHERE run_id = ? AND key = ?`)
    .get(
      runId,
      key,
    ) as SummaryRow | undefined;
  return row ? { ...row, last_value: fromSql(row.last_value) } : null;
}

/** Every key a run has, with its summary. */
export function listKeySummaries(db: Database, runId: string): KeySummary[] {
  const rows = db.prepare(
    `SELECT ${SUMMARY_COLUMNS} FROM metric_keys WHERE run_id = ? ORDER BY key`,
  ).all(runId) as unknown as SummaryRow[];
  const held = txStates.get(db)?.summaries;
  return rows.map((row) =>
    held?.get(summaryId(runId, row.key))?.summary ??
      { ...row, last_value: fromSql(row.last_value) }
  );
}

/** A series in columns, ordered by step, optionally limited to a step or wall-time range. */
export function readSeries(
  db: Database,
  runId: string,
  key: string,
  range?: { column: "step" | "wall_time"; from: number; to: number },
): { steps: number[]; values: number[]; wall_times: number[] } {
  let sql = "SELECT step, value, wall_time FROM metric_points WHERE run_id = ? AND key = ?";
  const params: (string | number)[] = [runId, key];
  if (range) {
    sql += ` AND ${range.column} BETWEEN ? AND ?`;
    params.push(range.from, range.to);
  }
  sql += " ORDER BY step";
  const rows = allAsArrays<[number, number | null, number]>(db.prepare(sql), params);
  const n = rows.length;
  const steps = new Array<number>(n);
  const values = new Array<number>(n);
  const wallTimes = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    steps[i] = r[0];
    values[i] = fromSql(r[1]);
    wallTimes[i] = r[2];
  }
  return { steps, values, wall_times: wallTimes };
}

type PointRow = Omit<StoredPoint, "value"> & { value: number | null };

/** A run's keys with their steps and the sequence number of their newest write. */
function keySeqs(
  db: Database,
  runId: string,
): { key: string; first_step: number; last_step: number; last_seq: number }[] {
  const rows = db.prepare(
    "SELECT key, first_step, last_step, last_seq FROM metric_keys WHERE run_id = ?",
  ).all(runId) as unknown as {
    key: string;
    first_step: number;
    last_step: number;
    last_seq: number;
  }[];
  const held = txStates.get(db)?.summaries;
  if (!held?.size) return rows;
  return rows.map((r) => {
    const h = held.get(summaryId(runId, r.key));
    return h
      ? {
        key: r.key,
        first_step: h.summary.first_step,
        last_step: h.summary.last_step,
        last_seq: h.lastSeq,
      }
      : r;
  });
}

/**
 * The lowest step from which every point of the key below `hi` was written after `afterSeq`
 * (`hi` when none was). Below `hi` — the key's last step + 1, or the lowest step a listed
 * rewrite after `afterSeq` touched — the points written after `afterSeq` are those above the
 * key's last step at `afterSeq`, so their steps are a suffix: found by probing down from `hi`
 * in doubling strides, then by bisection, each probe one seek of the primary key.
 */
function firstStepAfter(
  db: Database,
  runId: string,
  key: string,
  afterSeq: number,
  lo: number,
  hi: number,
): number {
  const probe = db.prepare(
    "SELECT step, seq FROM metric_points WHERE run_id = ? AND key = ? AND step >= ? ORDER BY step LIMIT 1",
  );
  // Whether every point at or above `step` (and below `hi`) was written after `afterSeq`;
  // false moves the lower bound past the point found.
  let a = lo;
  let b = hi;
  const after = (step: number): boolean => {
    const row = probe.get(runId, key, step) as { step: number; seq: number } | undefined;
    if (!row || row.step >= hi || row.seq > afterSeq) return true;
    a = row.step + 1;
    return false;
  };
  // Down from the top in growing strides first: a resumed stream mostly missed recent points.
  for (let stride = 1; hi - stride > a; stride *= 2) {
    if (!after(hi - stride)) break;
    b = hi - stride;
  }
  while (a < b) {
    const mid = a + Math.floor((b - a) / 2);
    if (after(mid)) b = mid;
  }
  return a;
}

/** Where one key's points after a sequence number are read from, and those read so far. */
interface KeyCursor {
  key: string;
  /** The lowest step that may hold a point after the sequence number. */
  from: number;
  /** Whether the points from `from` on are in write order by step (no rewrite listed). */
  ordered: boolean;
  rows: PointRow[];
  /** Whether every point of the key after the sequence number is in `rows`. */
  done: boolean;
}

/** Reads up to `n` more of the cursor's points, in write order. */
function readMore(db: Database, runId: string, afterSeq: number, c: KeyCursor, n: number): void {
  const last = c.rows.length ? c.rows[c.rows.length - 1] : null;
  const page = (c.ordered
    ? db.prepare(
      "SELECT key, step, value, wall_time, seq FROM metric_points WHERE run_id = ? AND key = ? AND step >= ? ORDER BY step LIMIT ?",
    ).all(runId, c.key, last ? last.step + 1 : c.from, n)
    : db.prepare(
      "SELECT key, step, value, wall_time, seq FROM metric_points WHERE run_id = ? AND key = ? AND step >= ? AND seq > ? ORDER BY seq LIMIT ?",
    ).all(runId, c.key, c.from, last ? last.seq : afterSeq, n)) as unknown as PointRow[];
  for (const r of page) c.rows.push(r);
  if (page.length < n) c.done = true;
}

/**
 * Points of a run written after `seq`, in write order, at most `limit` (SSE resume). Each key
 * whose newest write is after `seq` is read from the primary key: from the step
 * `firstStepAfter` finds, in step order (which is write order there) unless a rewrite after
 * `seq` is listed for the key, then from its lowest step, keeping the newer points. The keys
 * are read a share of `limit` at a time, doubled until the points up to the lowest sequence
 * number a key still has unread beyond are at least `limit` (or none is left unread): so a run
 * of many keys reads about `limit` rows a page, not `limit` a key.
 */
export function pointsAfter(
  db: Database,
  runId: string,
  afterSeq: number,
  limit: number,
): StoredPoint[] {
  const rewrites = new Map<string, number>();
  for (
    const r of db.prepare(
      "SELECT key, MIN(min_step) AS min_step FROM metric_rewrites WHERE run_id = ? AND seq > ? GROUP BY key",
    ).all(runId, afterSeq) as unknown as { key: string; min_step: number }[]
  ) rewrites.set(r.key, r.min_step);
  const cursors: KeyCursor[] = [];
  for (const k of keySeqs(db, runId)) {
    if (k.last_seq <= afterSeq) continue;
    const rewrittenFrom = rewrites.get(k.key);
    const hi = rewrittenFrom ?? k.last_step + 1;
    const from = firstStepAfter(db, runId, k.key, afterSeq, Math.min(k.first_step, hi), hi);
    cursors.push({ key: k.key, from, ordered: rewrittenFrom === undefined, rows: [], done: false });
  }
  if (cursors.length === 0 || limit <= 0) return [];
  let n = Math.ceil((2 * limit) / cursors.length);
  for (const c of cursors) readMore(db, runId, afterSeq, c, n);
  let cut = Infinity;
  for (;;) {
    // Every point up to `cut` has been read: each key not done has read past it.
    cut = Infinity;
    for (const c of cursors) if (!c.done) cut = Math.min(cut, c.rows[c.rows.length - 1].seq);
    if (cut === Infinity) break;
    let below = 0;
    for (const c of cursors) for (const r of c.rows) if (r.seq <= cut) below++;
    if (below >= limit) break;
    n *= 2;
    for (const c of cursors) if (!c.done) readMore(db, runId, afterSeq, c, n);
  }
  const rows: PointRow[] = [];
  for (const c of cursors) for (const r of c.rows) if (r.seq <= cut) rows.push(r);
  rows.sort((a, b) => a.seq - b.seq);
  if (rows.length > limit) rows.length = limit;
  return rows.map((r) => ({ ...r, value: fromSql(r.value) }));
}

/** The newest write sequence number of a run (0 when it has no points). */
export function lastPointSeq(db: Database, runId: string): number {
  let last = 0;
  for (const k of keySeqs(db, runId)) if (k.last_seq > last) last = k.last_seq;
  return last;
}

/** The value of `key` at the nearest step at or below `step`. */
export function valueAtOrBefore(
  db: Database,
  runId: string,
  key: string,
  step: number,
): { step: number; value: number } | null {
  const row = db.prepare(
    "SELECT step, value FROM metric_points WHERE run_id = ? AND key = ? AND step <= ? ORDER BY step DESC LIMIT 1",
  ).get(runId, key, step) as { step: number; value: number | null } | undefined;
  return row ? { step: row.step, value: fromSql(row.value) } : null;
}

/**
 * A run's points written before `beforeSeq` whose key matches one of the LIKE patterns, in
 * write order (rebuilding rule state after a restart).
 */
export function pointsBefore(
  db: Database,
  runId: string,
  beforeSeq: number,
  likePatterns: string[],
): StoredPoint[] {
  const keys = likePatterns.map(() => "key LIKE ?").join(" OR ");
  const rows = db.prepare(
    `SELECT key, step, value, wall_time, seq FROM metric_points
     WHERE run_id = ? AND seq < ? AND (${keys}) ORDER BY seq`,
  ).all(runId, beforeSeq, ...likePatterns) as unknown as PointRow[];
  return rows.map((r) => ({ ...r, value: fromSql(r.value) }));
}
