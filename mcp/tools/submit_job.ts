/**
 * `submit_job`: queues a training job — a command run in a working dir on a GPU host with
 * exclusive GPUs — and answers the job with how to wait for it.
 */
import { z } from "zod";
import { jobSubmitRequest } from "../../protocol/rest/jobs.ts";
import { submitJob } from "../../server/jobs/service.ts";
import { dryRunJob } from "../../server/jobs/dry_run.ts";
import { lastEventId } from "../../server/events/service.ts";
import { defineTool } from "../_tool.ts";
import { waitAction } from "./_format.ts";
import { jobShape, nextActions } from "../_shapes.ts";

/** What a dry run answers instead of the job (the job's own fields are then absent). */
const dryRunShape = {
  dry_run: z.boolean().optional().describe("true: only checked, nothing stored"),
  placement: z.looseObject({
    starts_now: z.boolean(),
    node_id: z.string().nullable(),
    gpu_indices: z.array(z.number()).nullable(),
    estimated_start_at: z.string().nullable(),
    reason: z.string().nullable(),
  }).optional().describe("Dry run: where and when it would start"),
  budget_after: z.record(z.string(), z.unknown()).nullable().optional().describe(
    "Dry run: the token's budget once the job is queued: limit, used, left of each",
  ),
};

/** `submit_job`: `POST /api/jobs`. */
export const submitJobTool = defineTool({
  name: "submit_job",
  title: "Submit a job",
  description: "Queues a training job: a plain command run in working_dir on a GPU host with " +
    "`gpus` exclusive GPUs (CUDA_VISIBLE_DEVICES set to exactly those). Name project and " +
    "experiment so runs can be compared; set checkpoint_dir / tensorboard_dir to have " +
    'checkpoints and TensorBoard scalars picked up; stop_on: ["LOSS_NAN"] cancels it on NaN. ' +
    "Returns the job; wait on it with wait_for_run {job_id}. dry_run: true only checks it " +
    "(validation, budget, where and when it would start, the budget after) and stores " +
    "nothing. A submission past the token's budget is refused with BudgetExceeded naming the " +
    "budget, the use and the limit. Needs a write token.",
  kind: "control",
  input: jobSubmitRequest,
  output: jobShape.partial().extend({ next_actions: nextActions.optional(), ...dryRunShape }),
  run(ctx, { dry_run, ...args }, call) {
    if (dry_run) {
      const plan = dryRunJob(ctx, args, call.principal.token_id);
      return { data: { ...plan }, summary: plan.summary };
    }
    const since = lastEventId(ctx);
    const j = submitJob(ctx, args, "TRAIN", { submitted_by: call.principal.token_id });
    const wait = waitAction(j.id, since);
    const where = j.experiment ? `${j.project}/${j.experiment}` : j.project;
    return {
      data: { ...j, next_actions: [wait] },
      summary: `Queued job ${j.name} (${j.id}) in ${where}: ${j.gpus} GPU(s), priority ` +
        `${j.priority}. Next: wait_for_run ${JSON.stringify(wait.args)} returns when it ` +
        "finishes or an anomaly fires.",
    };
  },
});
