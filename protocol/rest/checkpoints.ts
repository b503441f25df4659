/** What the checkpoint routes accept: an evaluation of a checkpoint, and the recommendation's query. */
import { z } from "zod";
import { command, gpuCount, id, MAX_NAME_LENGTH, name, priority, text } from "./fields.ts";

/**
 * `POST /api/checkpoints/{id}/evaluations`. The job inherits the training job's settings;
 * `working_dir` (and `command`, unless the project has an `eval_command`) are needed for a run
 * that no job produced.
 */
export const evaluationRequest = z.strictObject({
  suite: name.describe(
    'The evaluation suite\'s name, e.g. "heldout"; results are ranked per suite',
  ),
  command: command.optional().describe(
    "The evaluation command (default: the project's eval_command). It finds the checkpoint in " +
      '$GPUCTL_CHECKPOINT_PATH and writes {"metrics": {...}} to $GPUCTL_EVAL_OUTPUT',
  ),
  working_dir: text.min(1, "must not be empty").optional().describe(
    "Where it runs (default: the training job's working_dir)",
  ),
  gpus: gpuCount.optional().describe(
    "GPUs for the evaluation (default: the training job's)",
  ),
  node: name.optional().describe("Run it on this node (default: where the checkpoint was written)"),
  priority: priority.optional().describe(
    "Higher runs first (default: the training job's)",
  ),
});
export type EvaluationRequest = z.infer<typeof evaluationRequest>;

/** `GET /api/checkpoints:recommend?run=` or `?experiment=<project>/<experiment>`. */
export const recommendQuery = z.object({
  run: id.optional(),
  experiment: z.string().max(2 * MAX_NAME_LENGTH + 1).regex(
    /^[^/]+\/.+$/,
    'must be "<project>/<experiment>"',
  ).optional(),
}).superRefine((q, ctx) => {
  if ((q.run === undefined) === (q.experiment === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["run"],
      message: 'name exactly one of run or experiment ("<project>/<experiment>")',
    });
  }
});
