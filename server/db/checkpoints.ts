import type { Checkpoint } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

interface CheckpointRow extends Omit<Checkpoint, "metrics"> {
  metrics: string;
}

const toCheckpoint = (r: CheckpointRow): Checkpoint => ({
  id: r.id,
  run_id: r.run_id,
  step: r.step,
  epoch: r.epoch,
  path: r.path,
  size_bytes: r.size_bytes,
  metrics: json(r.metrics, {}),
  created_at: r.created_at,
});

/** Registers a checkpoint; the same path of the same run is updated, never duplicated. */
export function upsertCheckpoint(
  db: Database,
  c: Checkpoint,
): { checkpoint: Checkpoint; created: boolean } {
  const existing = db.prepare("SELECT * FROM checkpoints WHERE run_id = ? AND path = ?").get(
    c.run_id,
    c.path,
  ) as CheckpointRow | undefined;
  if (existing) {
    db.prepare(
      `UPDATE checkpoints SET step = COALESCE(?, step), epoch = COALESCE(?, epoch),
         size_bytes = COALESCE(?, size_bytes), metrics = ? WHERE id = ?`,
    ).run(c.step, c.epoch, c.size_bytes, JSON.stringify(c.metrics), existing.id);
    return { checkpoint: getCheckpoint(db, existing.id)!, created: false };
  }
  db.prepare(
    `INSERT INTO checkpoints (id, run_id, step, epoch, path, size_bytes, metrics, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    c.id,
    c.run_id,
    c.step,
    c.epoch,
    c.path,
    c.size_bytes,
    JSON.stringify(c.metrics),
    c.created_at,
  );
  return { checkpoint: c, created: true };
}

export function getCheckpoint(db: Database, id: string): Checkpoint | null {
  const row = db.prepare("SELECT * FROM checkpoints WHERE id = ?").get(id) as
    | CheckpointRow
    | undefined;
  return row ? toCheckpoint(row) : null;
}

/** A run's checkpoints by step (unknown steps last), then registration order. */
export function listCheckpoints(db: Database, runId: string): Checkpoint[] {
  const rows = db.prepare(
    "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step IS NULL, step, seq",
  ).all(runId) as unknown as CheckpointRow[];
  return rows.map(toCheckpoint);
}
