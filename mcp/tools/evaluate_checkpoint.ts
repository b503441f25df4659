/**
 * `evaluate_checkpoint`: queues an EVALUATE job that runs the project's eval command on a
 * checkpoint with a suite, and answers the evaluation, its job and how to wait for it.
 */
import { z } from "zod";
import { evaluationRequest } from "../../protocol/rest/checkpoints.ts";
import { queueEvaluation } from "../../server/evaluations/mod.ts";
import { lastEventId } from "../../server/events/service.ts";
import { defineTool } from "../_tool.ts";
import { waitAction } from "./_format.ts";
import { jobShape, nextActions } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** `evaluate_checkpoint`: `POST /api/checkpoints/{id}/evaluations`. */
export const evaluateCheckpointTool = defineTool({
  name: "evaluate_checkpoint",
  title: "Evaluate a checkpoint",
  description: "Queues an EVALUATE job on a checkpoint with a suite: the project's eval_command " +
    '(or command) runs with $GPUCTL_CHECKPOINT_PATH set and writes {"metrics": {...}} to ' +
    "$GPUCTL_EVAL_OUTPUT. Held-out results then rank checkpoints ahead of training metrics in " +
    "compare_checkpoints and get_best_checkpoint. Wait with wait_for_run {job_id}. Needs a write token.",
  kind: "control",
  input: evaluationRequest.extend({ checkpoint_id: idField("The checkpoint to evaluate") }),
  output: z.looseObject({
    evaluation: z.looseObject({ id: z.string(), status: z.string(), suite: z.string() }),
    job: jobShape,
    next_actions: nextActions,
  }),
  run(ctx, { checkpoint_id, ...request }, call) {
    const since = lastEventId(ctx);
    const answer = queueEvaluation(ctx, checkpoint_id, request, call.principal.token_id);
    const wait = waitAction(answer.job.id, since);
    return {
      data: { ...answer, next_actions: [wait] },
      summary: `Evaluation ${answer.evaluation.id} of checkpoint ${checkpoint_id} on suite ` +
        `"${request.suite}" queued as job ${answer.job.id}. Next: wait_for_run ` +
        `${JSON.stringify(wait.args)}, then get_best_checkpoint.`,
    };
  },
});
