/**
 * Evaluations as the API shows them (a QUEUED one whose job started reads RUNNING): of a
 * checkpoint, by id, and with each of a run's checkpoints.
 */
import type { CheckpointWithEvaluations, Evaluation, Page } from "../../protocol/objects.ts";
import type { JobStatus } from "../../protocol/vocabulary.ts";
import {
  checkpoints as checkpointsDb,
  evaluations as evaluationsDb,
  jobs as jobsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { StoredEvaluation } from "../db/evaluations.ts";
import type { Context } from "../context.ts";
import { notFound } from "../errors.ts";

/** An evaluation as the API shows it: a QUEUED one whose job has started reads RUNNING. */
export function evaluationView(e: StoredEvaluation, jobStatus: JobStatus | null): Evaluation {
  const running = e.status === "QUEUED" && (jobStatus === "DISPATCHED" || jobStatus === "RUNNING");
  return { ...e, status: running ? "RUNNING" : e.status };
}

function views(ctx: Context, stored: StoredEvaluation[]): Evaluation[] {
  const statuses = new Map<string, JobStatus | null>();
  return stored.map((e) => {
    if (e.job_id && !statuses.has(e.job_id)) {
      statuses.set(e.job_id, jobsDb.getJob(ctx.db, e.job_id)?.status ?? null);
    }
    return evaluationView(e, e.job_id ? statuses.get(e.job_id)! : null);
  });
}

/** The evaluations of each of the given checkpoints, oldest first. */
export function evaluationsByCheckpoint(
  ctx: Context,
  checkpointIds: readonly string[],
): Map<string, Evaluation[]> {
  const out = new Map<string, Evaluation[]>(checkpointIds.map((id) => [id, []]));
  for (const e of views(ctx, evaluationsDb.listEvaluationsOfCheckpoints(ctx.db, checkpointIds))) {
    out.get(e.checkpoint_id)?.push(e);
  }
  return out;
}

/** `GET /api/checkpoints/{id}/evaluations`: oldest first; NotFoundError for an unknown checkpoint. */
export function listEvaluations(ctx: Context, checkpointId: string): Page<Evaluation> {
  if (!checkpointsDb.getCheckpoint(ctx.db, checkpointId)) {
    throw notFound("Checkpoint", checkpointId);
  }
  return {
    items: evaluationsByCheckpoint(ctx, [checkpointId]).get(checkpointId)!,
    next_cursor: null,
  };
}

/** `GET /api/evaluations/{id}`. */
export function getEvaluation(ctx: Context, id: string): Evaluation {
  const e = evaluationsDb.getEvaluation(ctx.db, id);
  if (!e) throw notFound("Evaluation", id);
  return views(ctx, [e])[0];
}

/** A run's checkpoints (by step), each with its evaluations: `GET /api/runs/{id}/checkpoints`. */
export function checkpointsWithEvaluations(
  ctx: Context,
  runId: string,
): CheckpointWithEvaluations[] {
  if (!runsDb.getRun(ctx.db, runId)) throw notFound("Run", runId);
  const checkpoints = checkpointsDb.listCheckpoints(ctx.db, runId);
  const byCheckpoint = evaluationsByCheckpoint(ctx, checkpoints.map((c) => c.id));
  return checkpoints.map((c) => ({ ...c, evaluations: byCheckpoint.get(c.id)! }));
}
