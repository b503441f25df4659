/**
 * Checkpoint records: registered once per run and path, marked overwritten by another run's
 * file, gone or incomplete, and read back with their state.
 */
import type { Checkpoint } from "../../protocol/objects.ts";
import type { CheckpointState } from "../../protocol/vocabulary.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

interface CheckpointRow extends Omit<Checkpoint, "metrics" | "overwritten" | "state"> {
  host: string | null;
  metrics: string;
  overwritten_at: string | null;
  written_at: string | null;
}

/**
 * A checkpoint as the store keeps it: the API object plus the host its path lives on and when
 * its current file was registered (a rewrite by its own run moves it).
 */
export interface StoredCheckpoint extends Checkpoint {
  host: string | null;
  written_at: string;
}

/** What registering a checkpoint writes. */
export type NewCheckpoint = Omit<
  StoredCheckpoint,
  "overwritten" | "overwritten_by_run" | "state" | "gone_at" | "written_at"
>;

/** A record's state: overwritten before gone (which run's weights it holds says more), then incomplete. */
function stateOf(r: CheckpointRow): CheckpointState {
  if (r.overwritten_by_run !== null) return "overwritten";
  if (r.gone_at !== null) return "gone";
  return r.problem !== null ? "incomplete" : "valid";
}

const toStored = (r: CheckpointRow): StoredCheckpoint => ({
  id: r.id,
  run_id: r.run_id,
  step: r.step,
  epoch: r.epoch,
  path: r.path,
  size_bytes: r.size_bytes,
  mtime: r.mtime,
  metrics: json(r.metrics, {}),
  created_at: r.created_at,
  overwritten: r.overwritten_by_run !== null,
  overwritten_by_run: r.overwritten_by_run,
  state: stateOf(r),
  problem: r.problem,
  gone_at: r.gone_at,
  fingerprint: r.fingerprint,
  host: r.host,
  written_at: r.written_at ?? r.created_at,
});

/** The API object: the host and the write time stay inside the server. */
export const publicCheckpoint = (
  { host: _host, written_at: _written, ...c }: StoredCheckpoint,
): Checkpoint => c;

/**
 * Registers a checkpoint; the same path of the same run is updated, never duplicated.
 * `rewritten`: an update that reports another modification time or fingerprint (the run saved
 * the file again): the record describes the new file, complete or not, and it exists again.
 */
export function upsertCheckpoint(
  db: Database,
  c: NewCheckpoint,
): { checkpoint: StoredCheckpoint; created: boolean; rewritten: boolean } {
  const existing = db.prepare(
    "SELECT id, mtime, fingerprint FROM checkpoints WHERE run_id = ? AND path = ?",
  ).get(c.run_id, c.path) as
    | { id: string; mtime: string | null; fingerprint: string | null }
    | undefined;
  if (existing) {
    const rewritten = (c.mtime !== null && c.mtime !== existing.mtime) ||
      (c.fingerprint !== null && c.fingerprint !== existing.fingerprint);
    db.prepare(
      `UPDATE checkpoints SET step = COALESCE(?, step), epoch = COALESCE(?, epoch),
         size_bytes = COALESCE(?, size_bytes), mtime = COALESCE(?, mtime), metrics = ?,
         fingerprint = COALESCE(?, fingerprint), problem = ?,
         gone_at = CASE WHEN ? THEN NULL ELSE gone_at END,
         written_at = CASE WHEN ? THEN ? ELSE written_at END
       WHERE id = ?`,
    ).run(
      c.step,
      c.epoch,
      c.size_bytes,
      c.mtime,
      JSON.stringify(c.metrics),
      c.fingerprint,
      c.problem,
      rewritten ? 1 : 0,
      rewritten ? 1 : 0,
      c.created_at,
      existing.id,
    );
    return { checkpoint: getStoredCheckpoint(db, existing.id)!, created: false, rewritten };
  }
  db.prepare(
    `INSERT INTO checkpoints
       (id, run_id, step, epoch, path, size_bytes, mtime, host, metrics, created_at,
        fingerprint, problem)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    c.id,
    c.run_id,
    c.step,
    c.epoch,
    c.path,
    c.size_bytes,
    c.mtime,
    c.host,
    JSON.stringify(c.metrics),
    c.created_at,
    c.fingerprint,
    c.problem,
  );
  return { checkpoint: getStoredCheckpoint(db, c.id)!, created: true, rewritten: false };
}

/**
 * Marks gone the records of `path` on `host` (any run's) that describe the vanished file or an
 * older one: modification time at or before `mtime` (all of them when it is unknown), so a
 * late report of an old deletion never marks a newer file. Returns the records marked.
 */
export function markGone(
  db: Database,
  host: string | null,
  path: string,
  mtime: string | null,
  at: string,
): StoredCheckpoint[] {
  const rows = db.prepare(
    `SELECT * FROM checkpoints WHERE path = ? AND host IS ? AND gone_at IS NULL
       AND (? IS NULL OR mtime IS NULL OR mtime <= ?) ORDER BY seq`,
  ).all(path, host, mtime, mtime) as unknown as CheckpointRow[];
  const mark = db.prepare("UPDATE checkpoints SET gone_at = ? WHERE id = ?");
  for (const r of rows) mark.run(at, r.id);
  return rows.map((r) => toStored({ ...r, gone_at: at }));
}

/** Checkpoints of other runs at the same path on the same host (NULL hosts match each other). */
export function samePathOfOtherRuns(db: Database, c: StoredCheckpoint): StoredCheckpoint[] {
  const rows = db.prepare(
    `SELECT * FROM checkpoints WHERE path = ? AND host IS ? AND run_id <> ? ORDER BY seq`,
  ).all(c.path, c.host, c.run_id) as unknown as CheckpointRow[];
  return rows.map(toStored);
}

/** Marks a checkpoint's file as replaced by another run's; the first mark stays. */
export function markOverwritten(db: Database, id: string, byRun: string, at: string): boolean {
  const r = db.prepare(
    `UPDATE checkpoints SET overwritten_by_run = ?, overwritten_at = ?
     WHERE id = ? AND overwritten_by_run IS NULL`,
  ).run(byRun, at, id);
  return Number(r.changes) > 0;
}

/** The run saved the file again after the run that had overwritten it: it is its own again. */
export function clearOverwritten(db: Database, id: string): void {
  db.prepare(
    "UPDATE checkpoints SET overwritten_by_run = NULL, overwritten_at = NULL WHERE id = ?",
  ).run(id);
}

export function getStoredCheckpoint(db: Database, id: string): StoredCheckpoint | null {
  const row = db.prepare("SELECT * FROM checkpoints WHERE id = ?").get(id) as
    | CheckpointRow
    | undefined;
  return row ? toStored(row) : null;
}

export function getCheckpoint(db: Database, id: string): Checkpoint | null {
  const c = getStoredCheckpoint(db, id);
  return c ? publicCheckpoint(c) : null;
}

/** A run's checkpoints by step (unknown steps last), then registration order. */
export function listCheckpoints(db: Database, runId: string): Checkpoint[] {
  return listStoredCheckpoints(db, runId).map(publicCheckpoint);
}

/** `listCheckpoints` as the store keeps them. */
export function listStoredCheckpoints(db: Database, runId: string): StoredCheckpoint[] {
  const rows = db.prepare(
    "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step IS NULL, step, seq",
  ).all(runId) as unknown as CheckpointRow[];
  return rows.map(toStored);
}
