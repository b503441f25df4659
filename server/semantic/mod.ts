/**
 * The semantic layer: what the recorded data means. Five pure decisions over plain data —
 * diagnose a run, compare runs, compare checkpoints, recommend the best checkpoint, explain a
 * failure — each answering in self-explanatory JSON with `next_actions` for an agent; and the
 * service functions that load their facts for the REST routes and MCP tools.
 *
 * @module
 */

export {
  /** The health of a run: progress, rate, ETA, trend, anomalies, GPU use, failure, next steps. */
  diagnoseRun,
} from "./diagnose_run.ts";
export type { RunDiagnosisInput } from "./diagnose_run.ts";
export {
  /** Runs side by side on one metric, ranked, with their config differences. */
  compareRuns,
} from "./compare_runs.ts";
export type { CompareRunsInput } from "./compare_runs.ts";
export {
  /** A run's checkpoints ranked, held-out evaluation results first. */
  compareCheckpoints,
} from "./compare_checkpoints.ts";
export {
  /** The checkpoint to use, the basis of the choice and the alternatives. */
  getBestCheckpoint,
} from "./best_checkpoint.ts";
export type { BestCheckpointInput } from "./best_checkpoint.ts";
export {
  /** Why a run failed and what to do next. */
  explainFailure,
} from "./explain_failure.ts";
export type { ExplainFailureInput } from "./explain_failure.ts";
export {
  /** Ranks checkpoints: evaluated ones by held-out results, the others by training metric. */
  rankCheckpoints,
} from "./rank_checkpoints.ts";
export type { CheckpointCandidate, Ranking, RankingInput } from "./rank_checkpoints.ts";
export {
  /** Which way is better for a key in a scope (definitions, then the name). */
  keyDirection,
} from "./metric_direction.ts";
export {
  /** `GET /api/runs/{id}/checkpoints:compare`. */
  compareCheckpointsOfRun,
  /** `GET /api/runs/compare`. */
  compareRunsByIds,
  /** `GET /api/runs/{id}/diagnosis`. */
  diagnoseRunById,
  /** `GET /api/runs/{id}/failure`. */
  explainRunFailure,
  /** `GET /api/checkpoints:recommend`. */
  recommendCheckpoint,
} from "./service.ts";
