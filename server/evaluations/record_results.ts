/**
 * An evaluation's outcome: the results its job's run reported make it COMPLETED (merged when
 * reported again), and a job that ended without them makes it FAILED.
 */
import { encodeMetricValue, type Evaluation } from "../../protocol/objects.ts";
import {
  checkpoints as checkpointsDb,
  evaluations as evaluationsDb,
  jobs as jobsDb,
  metrics as metricsDb,
  projects as projectsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { StoredRun } from "../db/runs.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { resolvePrimaryKey } from "../metrics/primary_metric.ts";
import { keyDirections } from "../semantic/metric_direction.ts";
import { headlineMetric } from "./headline_metric.ts";

/** Results as they arrive in an ingest batch (`run.log_evaluation()` or the job's JSON file). */
export interface EvaluationResults {
  metrics: Record<string, unknown>;
  suite?: string;
}

/**
 * Stores the results an EVALUATE job's run reported on its evaluation: COMPLETED, with the
 * metrics, the duration since the job started, and an `EVALUATION_COMPLETED` event on the
 * checkpoint's run. Results reported again are merged (newest value per key wins) without a
 * second event. Runs outside an evaluation job (an SDK run, a training job logging eval metrics)
 * have no evaluation record: their results are left alone and null is returned. Runs inside the
 * caller's transaction.
 */
export function recordEvaluationResults(
  ctx: Context,
  run: StoredRun,
  results: EvaluationResults,
): Evaluation | null {
  if (!run.job_id) return null;
  const candidates = evaluationsDb.evaluationsOfJob(ctx.db, run.job_id);
  const evaluation = candidates.find((e) => e.suite === results.suite) ?? candidates[0];
  if (!evaluation) return null;
  const at = ctx.now();
  const job = jobsDb.getJob(ctx.db, run.job_id);
  const started = job?.started_at ?? run.started_at;
  const duration = started ? Math.max(0, (at.getTime() - Date.parse(started)) / 1000) : null;
  const completedBefore = evaluation.status === "COMPLETED";
  const metrics = completedBefore ? { ...evaluation.metrics, ...results.metrics } : results.metrics;
  evaluationsDb.completeEvaluation(ctx.db, evaluation.id, {
    metrics,
    duration_s: duration,
    finished_at: at.toISOString(),
  });
  if (!completedBefore) announce(ctx, evaluation.id, run.id, metrics);
  return { ...evaluationsDb.getEvaluation(ctx.db, evaluation.id)!, status: "COMPLETED" };
}

function announce(
  ctx: Context,
  evaluationId: string,
  evalRunId: string,
  metrics: Record<string, unknown>,
): void {
  const evaluation = evaluationsDb.getEvaluation(ctx.db, evaluationId)!;
  const checkpoint = checkpointsDb.getCheckpoint(ctx.db, evaluation.checkpoint_id)!;
  const trained = runsDb.getRun(ctx.db, checkpoint.run_id);
  const headline = trained ? headlineOf(ctx, trained, metrics) : null;
  const step = checkpoint.step === null ? "" : ` at step ${checkpoint.step}`;
  const result = headline ? `${headline.key} = ${headline.value}` : "no numeric result";
  emitEvent(ctx, {
    type: "EVALUATION_COMPLETED",
    severity: "info",
    run_id: checkpoint.run_id,
    job_id: evaluation.job_id,
    message: `Evaluation "${evaluation.suite}" of checkpoint ${checkpoint.id}${step} ` +
      `(run ${checkpoint.run_id}) completed: ${result}`,
    data: {
      evaluation_id: evaluation.id,
      checkpoint_id: checkpoint.id,
      suite: evaluation.suite,
      step: checkpoint.step,
      eval_run_id: evalRunId,
      headline: headline ? { key: headline.key, value: encodeMetricValue(headline.value) } : null,
      metrics,
    },
  });
}

/** The headline of results, preferring the trained run's primary metric. */
function headlineOf(ctx: Context, run: StoredRun, metrics: Record<string, unknown>) {
  const definitions = projectsDb.listMetricDefinitions(ctx.db);
  const project = projectsDb.getProject(ctx.db, run.project);
  const experiment = run.experiment
    ? projectsDb.getExperiment(ctx.db, run.project, run.experiment)
    : null;
  const primary = resolvePrimaryKey(
    {
      project: run.project,
      experiment: run.experiment,
      projectPrimary: project?.primary_metric,
      experimentPrimary: experiment?.primary_metric,
    },
    definitions,
    metricsDb.listKeySummaries(ctx.db, run.id).map((k) => k.key),
  );
  const directions = keyDirections(run, definitions, Object.keys(metrics));
  return headlineMetric(metrics, primary?.key ?? null, directions);
}

/**
 * Marks the QUEUED evaluations of an EVALUATE job FAILED, with an `EVALUATION_FAILED` event
 * giving `reason`; for a job that ended FAILED, CANCELLED or LOST for good (not requeued).
 * Results that still arrive later complete the evaluation. Returns how many were marked. Runs
 * inside the caller's transaction.
 */
export function failEvaluationsOfJob(ctx: Context, jobId: string, reason: string): number {
  const at = ctx.now();
  const job = jobsDb.getJob(ctx.db, jobId);
  let failed = 0;
  for (const e of evaluationsDb.evaluationsOfJob(ctx.db, jobId)) {
    const started = job?.started_at ?? null;
    const duration = started ? Math.max(0, (at.getTime() - Date.parse(started)) / 1000) : null;
    if (
      !evaluationsDb.failEvaluation(ctx.db, e.id, {
        duration_s: duration,
        finished_at: at.toISOString(),
      })
    ) continue;
    failed++;
    const checkpoint = checkpointsDb.getCheckpoint(ctx.db, e.checkpoint_id);
    emitEvent(ctx, {
      type: "EVALUATION_FAILED",
      severity: "warning",
      run_id: checkpoint?.run_id ?? null,
      job_id: jobId,
      message: `Evaluation "${e.suite}" of checkpoint ${e.checkpoint_id} failed without ` +
        `results: ${reason}`,
      data: { evaluation_id: e.id, checkpoint_id: e.checkpoint_id, suite: e.suite, reason },
    });
  }
  return failed;
}
