/**
 * `submit_job`: queues a training job — a command run in a working dir on a GPU host with
 * exclusive GPUs — and answers the job with how to wait for it.
 */
import { jobSubmission } from "../../protocol/rest.ts";
import { submitJob } from "../../server/jobs/service.ts";
import { lastEventId } from "../../server/events/service.ts";
import { defineTool } from "../_tool.ts";
import { waitAction } from "./_format.ts";
import { jobShape, nextActions } from "../_shapes.ts";

/** `submit_job`: `POST /api/jobs`. */
export const submitJobTool = defineTool({
  name: "submit_job",
  title: "Submit a job",
  description: "Queues a training job: a plain command run in working_dir on a GPU host with " +
    "`gpus` exclusive GPUs (CUDA_VISIBLE_DEVICES set to exactly those). Name project and " +
    "experiment so runs can be compared; set checkpoint_dir / tensorboard_dir to have " +
    'checkpoints and TensorBoard scalars picked up; stop_on: ["LOSS_NAN"] cancels it on NaN. ' +
    "Returns the job; wait on it with wait_for_run {job_id}. Needs a write token.",
  kind: "control",
  input: jobSubmission,
  output: jobShape.extend({ next_actions: nextActions }),
  run(ctx, args) {
    const since = lastEventId(ctx);
    const j = submitJob(ctx, args);
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
