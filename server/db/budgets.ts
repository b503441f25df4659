/**
 * Budgets: each token's limits, and the use its jobs make (the GPUs they hold, their running
 * intervals, queued jobs, checkpoint bytes), attributed through `jobs.submitted_by`.
 */
import type { TokenBudget } from "../../protocol/budgets.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

/** A token's budget; null when it has none. */
export function getBudget(db: Database, tokenId: string): TokenBudget | null {
  const row = db.prepare("SELECT budget FROM tokens WHERE id = ?").get(tokenId) as
    | { budget: string | null }
    | undefined;
  return row?.budget ? json<TokenBudget>(row.budget, {}) : null;
}

/** Sets a token's budget (null: none); false when the token does not exist. */
export function setBudget(db: Database, tokenId: string, budget: TokenBudget | null): boolean {
  return Number(
    db.prepare("UPDATE tokens SET budget = ? WHERE id = ?").run(
      budget ? JSON.stringify(budget) : null,
      tokenId,
    ).changes,
  ) > 0;
}

/** Every token that has a budget, with it. */
export function budgetedTokens(
  db: Database,
): { id: string; name: string; budget: TokenBudget }[] {
  const rows = db.prepare(
    "SELECT id, name, budget FROM tokens WHERE budget IS NOT NULL ORDER BY id",
  ).all() as { id: string; name: string; budget: string }[];
  return rows.map((r) => ({ id: r.id, name: r.name, budget: json<TokenBudget>(r.budget, {}) }));
}

/** Records the token that submitted a job (set once, at submission). */
export function setSubmitter(db: Database, jobId: string, tokenId: string): void {
  db.prepare("UPDATE jobs SET submitted_by = ? WHERE id = ?").run(tokenId, jobId);
}

/** Records the token that created a sweep: its trials are submitted in that token's name. */
export function setSweepCreator(db: Database, sweepId: string, tokenId: string): void {
  db.prepare("UPDATE sweeps SET created_by = ? WHERE id = ?").run(tokenId, sweepId);
}

export function sweepCreator(db: Database, sweepId: string): string | null {
  const row = db.prepare("SELECT created_by FROM sweeps WHERE id = ?").get(sweepId) as
    | { created_by: string | null }
    | undefined;
  return row?.created_by ?? null;
}

/** The token's jobs by status: how many, and how many GPUs they ask for. */
export function jobCounts(
  db: Database,
  tokenId: string,
): Map<string, { jobs: number; gpus: number }> {
  const rows = db.prepare(
    `SELECT status, COUNT(*) AS jobs, COALESCE(SUM(gpus), 0) AS gpus FROM jobs
     WHERE submitted_by = ? AND status IN ('QUEUED', 'DISPATCHED', 'RUNNING') GROUP BY status`,
  ).all(tokenId) as { status: string; jobs: number; gpus: number }[];
  return new Map(rows.map((r) => [r.status, { jobs: r.jobs, gpus: r.gpus }]));
}

/** A run of one of the token's GPU jobs that held GPUs at some time after `since`. */
export interface GpuInterval {
  gpus: number;
  started_at: string;
  finished_at: string | null;
}

/**
 * The runs of the token's GPU jobs that started and had not finished before `since` (ISO):
 * the intervals its GPU-hours of the window are summed over.
 */
export function gpuIntervals(db: Database, tokenId: string, since: string): GpuInterval[] {
  return db.prepare(
    `SELECT j.gpus AS gpus, r.started_at AS started_at, r.finished_at AS finished_at
     FROM jobs j JOIN runs r ON r.job_id = j.id
     WHERE j.submitted_by = ? AND j.gpus > 0 AND r.started_at IS NOT NULL
       AND (r.finished_at IS NULL OR r.finished_at > ?)`,
  ).all(tokenId, since) as unknown as GpuInterval[];
}

/**
 * Bytes of the checkpoints the token's jobs keep, per project: those whose file is still
 * there and was not overwritten by another run.
 */
export function checkpointBytes(db: Database, tokenId: string): Map<string, number> {
  const rows = db.prepare(
    `SELECT j.project AS project, COALESCE(SUM(c.size_bytes), 0) AS bytes
     FROM jobs j JOIN runs r ON r.job_id = j.id JOIN checkpoints c ON c.run_id = r.id
     WHERE j.submitted_by = ? AND c.gone_at IS NULL AND c.overwritten_by_run IS NULL
     GROUP BY j.project`,
  ).all(tokenId) as { project: string; bytes: number }[];
  return new Map(rows.map((r) => [r.project, r.bytes]));
}

/** Running jobs of a token, with when their attempt started. */
export function runningJobs(
  db: Database,
  tokenId: string,
): { id: string; name: string; project: string; gpus: number; started_at: string | null }[] {
  return db.prepare(
    `SELECT id, name, project, gpus, started_at FROM jobs
     WHERE submitted_by = ? AND status = 'RUNNING' AND cancel_requested = 0 ORDER BY seq`,
  ).all(tokenId) as {
    id: string;
    name: string;
    project: string;
    gpus: number;
    started_at: string | null;
  }[];
}
