/**
 * `cancel_job`: cancels a job — a queued one at once, a running one by SIGTERM to its process
 * group and SIGKILL after its grace — and answers the job, CANCELLED or still stopping.
 */
import { z } from "zod";
import { cancelJob } from "../../server/jobs/service.ts";
import { defineTool } from "../_tool.ts";
import { jobShape } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** `cancel_job`: `POST /api/jobs/{id}/cancel`. */
export const cancelJobTool = defineTool({
  name: "cancel_job",
  title: "Cancel a job",
  description: "Cancels a job: a queued one at once; a running one gets SIGTERM on its whole " +
    "process group and SIGKILL after grace_s. The run ends CANCELLED. Needs a write token.",
  kind: "control",
  annotations: { destructiveHint: true, idempotentHint: false },
  input: z.object({ job_id: idField("The job to cancel") }),
  output: jobShape,
  run(ctx, { job_id }, call) {
    const j = cancelJob(ctx, job_id, call.principal.name);
    return {
      data: { ...j },
      summary: j.status === "CANCELLED"
        ? `Job ${j.name} (${j.id}) is CANCELLED.`
        : `Cancel of job ${j.name} (${j.id}) requested; its agent is stopping it (status ${j.status}).`,
    };
  },
});
