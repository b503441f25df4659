/** Evaluation records: queued for a checkpoint, then completed with metrics or failed. */
import type { Evaluation } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

/** The states an evaluation is stored in; RUNNING is read off its job, never stored. */
export type StoredEvaluationStatus = "QUEUED" | "COMPLETED" | "FAILED";

/** An evaluation as stored. */
export interface StoredEvaluation extends Omit<Evaluation, "status"> {
  status: StoredEvaluationStatus;
}

interface EvaluationRow extends Omit<StoredEvaluation, "metrics"> {
  seq: number;
  metrics: string;
}

const toEvaluation = (r: EvaluationRow): StoredEvaluation => ({
  id: r.id,
  checkpoint_id: r.checkpoint_id,
  job_id: r.job_id,
  suite: r.suite,
  status: r.status,
  metrics: json(r.metrics, {}),
  duration_s: r.duration_s,
  created_at: r.created_at,
  finished_at: r.finished_at,
});

export type NewEvaluation = Pick<
  StoredEvaluation,
  "id" | "checkpoint_id" | "job_id" | "suite" | "created_at"
>;

/** Stores a QUEUED evaluation of a checkpoint. */
export function insertEvaluation(db: Database, e: NewEvaluation): void {
  db.prepare(
    `INSERT INTO evaluations (id, checkpoint_id, job_id, suite, status, created_at)
     VALUES (?, ?, ?, ?, 'QUEUED', ?)`,
  ).run(e.id, e.checkpoint_id, e.job_id, e.suite, e.created_at);
}

export function getEvaluation(db: Database, id: string): StoredEvaluation | null {
  const row = db.prepare("SELECT * FROM evaluations WHERE id = ?").get(id) as
    | EvaluationRow
    | undefined;
  return row ? toEvaluation(row) : null;
}

/** The evaluations of the given checkpoints, oldest first. */
export function listEvaluationsOfCheckpoints(
  db: Database,
  checkpointIds: readonly string[],
): StoredEvaluation[] {
  if (checkpointIds.length === 0) return [];
  const out: StoredEvaluation[] = [];
  // SQLite limits bound parameters per statement; 500 ids at a time stays well below it.
  for (let i = 0; i < checkpointIds.length; i += 500) {
    const ids = checkpointIds.slice(i, i + 500);
    const rows = db.prepare(
      `SELECT * FROM evaluations WHERE checkpoint_id IN (${
        ids.map(() => "?").join(", ")
      }) ORDER BY seq`,
    ).all(...ids) as unknown as EvaluationRow[];
    out.push(...rows.map(toEvaluation));
  }
  return out;
}

/** The evaluations an EVALUATE job runs (one, in practice), oldest first. */
export function evaluationsOfJob(db: Database, jobId: string): StoredEvaluation[] {
  const rows = db.prepare("SELECT * FROM evaluations WHERE job_id = ? ORDER BY seq").all(
    jobId,
  ) as unknown as EvaluationRow[];
  return rows.map(toEvaluation);
}

/** Stores results: the evaluation becomes COMPLETED with these metrics. */
export function completeEvaluation(
  db: Database,
  id: string,
  r: { metrics: Record<string, unknown>; duration_s: number | null; finished_at: string },
): void {
  db.prepare(
    "UPDATE evaluations SET status = 'COMPLETED', metrics = ?, duration_s = ?, finished_at = ? WHERE id = ?",
  ).run(JSON.stringify(r.metrics), r.duration_s, r.finished_at, id);
}

/** Marks a QUEUED evaluation FAILED; returns whether it was still QUEUED. */
export function failEvaluation(
  db: Database,
  id: string,
  r: { duration_s: number | null; finished_at: string },
): boolean {
  const res = db.prepare(
    "UPDATE evaluations SET status = 'FAILED', duration_s = ?, finished_at = ? WHERE id = ? AND status = 'QUEUED'",
  ).run(r.duration_s, r.finished_at, id);
  return Number(res.changes) > 0;
}
