/** `retry_job`: requeues a finished job as its next attempt (a new run of the same job). */
import { z } from "zod";
import { retryJob } from "../../server/jobs/service.ts";
import { lastEventId } from "../../server/events/service.ts";
import { defineTool } from "../_tool.ts";
import { waitAction } from "./_format.ts";
import { jobShape, nextActions } from "../_shapes.ts";
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
  output: jobShape.extend({ next_actions: nextActions }),
  run(ctx, { job_id }, call) {
    const since = lastEventId(ctx);
    const j = retryJob(ctx, job_id, call.principal.name);
    const wait = waitAction(j.id, since);
    return {
      data: { ...j, next_actions: [wait] },
      summary: `Job ${j.name} (${j.id}) requeued as attempt ${j.attempt}. Next: ` +
        `wait_for_run ${JSON.stringify(wait.args)}.`,
    };
  },
});
