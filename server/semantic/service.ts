/**
 * The semantic layer as the REST routes and MCP tools call it: load the facts, decide with the
 * pure functions, answer in JSON that explains itself.
 */
import type {
  CheckpointComparison,
  CheckpointRecommendation,
  FailureExplanation,
  RunComparison,
  RunDiagnosis,
} from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { diagnoseFailure } from "../failure/mod.ts";
import { conflict, invalidField } from "../errors.ts";
import { getBestCheckpoint } from "./best_checkpoint.ts";
import { compareCheckpoints } from "./compare_checkpoints.ts";
import { compareRuns } from "./compare_runs.ts";
import { compareCode } from "../lineage/code_diff.ts";
import { lineage as lineageDb } from "../db/mod.ts";
import { diagnoseRun } from "./diagnose_run.ts";
import { explainFailure, FAILED_STATUSES } from "./explain_failure.ts";
import {
  loadCheckpoints,
  loadDirections,
  loadEvents,
  loadExperimentRanking,
  loadFailureInput,
  loadJob,
  loadRun,
  loadRunRanking,
  loadRunsForComparison,
  loadSiblingRunIds,
  loadSuiteHint,
  loadWindows,
} from "./load.ts";

/** `GET /api/runs/{id}/diagnosis`. */
export function diagnoseRunById(ctx: Context, runId: string): RunDiagnosis {
  const run = loadRun(ctx, runId);
  const events = loadEvents(ctx, runId);
  const windows = loadWindows(ctx, run);
  return diagnoseRun({
    run,
    now: ctx.now(),
    primary_window: windows.primaryWindow,
    activity_window: windows.activityWindow,
    gpu_windows: windows.gpuWindows,
    events,
    failure: FAILED_STATUSES.has(run.status)
      ? diagnoseFailure(loadFailureInput(ctx, run, events))
      : null,
    checkpoints: loadCheckpoints(ctx, runId).length,
    sibling_run_ids: loadSiblingRunIds(ctx, run),
  });
}

/** `GET /api/runs/compare`: 2..50 distinct runs; 404 naming a run that does not exist. */
export function compareRunsByIds(ctx: Context, ids: string[], metric?: string): RunComparison {
  const distinct = [...new Set(ids)];
  if (distinct.length < 2) {
    const problem = `must name at least 2 different runs, got ${JSON.stringify(ids)}`;
    throw invalidField("query", "runs", problem);
  }
  const runs = loadRunsForComparison(ctx, distinct);
  const first = runs[0].run;
  const comparison = compareRuns({
    runs,
    metric,
    directions: loadDirections(ctx, first, runs, metric ? [metric] : []),
    now: ctx.now(),
  });
  // Next to the config diff: how each run's code differs from the first run's.
  const code = (id: string) => ({ id, code: lineageDb.getProvenance(ctx.db, id) });
  const codeDiff = distinct.slice(1).map((id) => compareCode(code(distinct[0]), code(id)));
  const differing = codeDiff.filter((c) => c.files.length > 0);
  const codeSummary = differing.length === 0
    ? ""
    : " Code: " + differing.map((c) =>
      `${c.b} differs from ${c.a} in ${c.files.map((f) => f.path).slice(0, 5).join(", ")}` +
      (c.files.length > 5 ? ` and ${c.files.length - 5} more` : "")
    ).join("; ") + ".";
  return { ...comparison, summary: comparison.summary + codeSummary, code_diff: codeDiff };
}

/** `GET /api/runs/{id}/checkpoints:compare`. */
export function compareCheckpointsOfRun(ctx: Context, runId: string): CheckpointComparison {
  return compareCheckpoints(loadRunRanking(ctx, runId));
}

/** `GET /api/checkpoints:recommend?run=` or `?experiment=<project>/<experiment>`. */
export function recommendCheckpoint(
  ctx: Context,
  scope: { run?: string; experiment?: string },
): CheckpointRecommendation {
  if (scope.run !== undefined) {
    return getBestCheckpoint({ ...loadRunRanking(ctx, scope.run), scope: { run_id: scope.run } });
  }
  const experiment = scope.experiment!;
  return getBestCheckpoint({ ...loadExperimentRanking(ctx, experiment), scope: { experiment } });
}

/** `GET /api/runs/{id}/failure`: 409 for a run that did not fail. */
export function explainRunFailure(ctx: Context, runId: string): FailureExplanation {
  const run = loadRun(ctx, runId);
  if (!FAILED_STATUSES.has(run.status)) {
    throw conflict(
      `Cannot explain a failure of run "${runId}": it is ${run.status}, not FAILED or LOST; ` +
        "use GET /api/runs/{id}/diagnosis (diagnose_run) for its health",
    );
  }
  const checkpoints = loadCheckpoints(ctx, runId);
  const job = loadJob(ctx, run.job_id);
  return explainFailure({
    run,
    job: job ? { id: job.id, status: job.status, attempt: job.attempt } : null,
    failure: loadFailureInput(ctx, run),
    checkpoints,
    suite_hint: loadSuiteHint(ctx, checkpoints),
  });
}
