import { z } from "zod";
import { retryJob } from "../../server/jobs/service.ts";
import { defineTool } from "../_tool.ts";
import { jobShape } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** `retry_job`: `POST /api/jobs/{id}/retry`. */
export const retryJobTool = defineTool({
  name: "retry_job",
  title: "Retry a job",
  description: "Requeues a finished job as its next attempt (a new run, the same job id and " +
    "command). Check explain_failure's retry advice first: an OOM or a NaN fails the same way " +
    "again unless something changes. Needs a write token.",
  kind: "control",
  input: z.object({ job_id: idField("The job to run again") }),
  output: jobShape,
  run(ctx, { job_id }, call) {
    const j = retryJob(ctx, job_id, call.principal.name);
    return {
      data: { ...j },
      summary: `Job ${j.name} (${j.id}) requeued as attempt ${j.attempt}. Next: ` +
        `wait_for_run {"job_id": "${j.id}"}.`,
    };
  },
});
