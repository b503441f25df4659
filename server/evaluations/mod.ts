/**
 * Evaluations of checkpoints: queue an EVALUATE job for a checkpoint and a suite, record the
 * results its run reports, fail it when its job ends without results, and list them.
 *
 * @module
 */

export {
  /** The EVALUATE job submission for a checkpoint (pure; 400 naming a missing field). */
  buildEvaluationSubmission,
  /** Where an evaluation job writes its JSON results: `<working_dir>/.gpuctl/eval-<id>.json`. */
  evalOutputPath,
} from "./build_submission.ts";
export type { EvaluationFacts } from "./build_submission.ts";
export {
  /** The key that ranks evaluation results: the primary metric, else the most common key. */
  chooseEvaluationKey,
  /** The metric an evaluation is announced with. */
  headlineMetric,
  /** A reported metric value as a number ("NaN" and "±Infinity" parsed), else null. */
  metricNumber,
} from "./headline_metric.ts";
export {
  /** A run's checkpoints, each with its evaluations. */
  checkpointsWithEvaluations,
  /** The evaluations of each of the given checkpoints. */
  evaluationsByCheckpoint,
  /** An evaluation as the API shows it (RUNNING while its job runs). */
  evaluationView,
  /** One evaluation by id. */
  getEvaluation,
  /** The evaluations of one checkpoint; 404 for an unknown checkpoint. */
  listEvaluations,
} from "./list_evaluations.ts";
export {
  /** Queues an EVALUATE job and its evaluation record in one transaction. */
  queueEvaluation,
} from "./queue_evaluation.ts";
export {
  /** Marks the QUEUED evaluations of a job that ended without results FAILED. */
  failEvaluationsOfJob,
  /** Stores the results an evaluation job's run reported. */
  recordEvaluationResults,
} from "./record_results.ts";
export type { EvaluationResults } from "./record_results.ts";
