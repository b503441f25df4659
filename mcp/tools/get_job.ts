/** `get_job`: one job — submission, status, attempt, node, GPUs, failure — and its current run. */
import { z } from "zod";
import { getJob } from "../../server/jobs/service.ts";
import { defineTool } from "../_tool.ts";
import { jobShape } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** `get_job`: `GET /api/jobs/{id}`. */
export const getJobTool = defineTool({
  name: "get_job",
  title: "Job",
  description: "One job: its submission (command, working_dir, gpus, env with secrets masked), " +
    "status, attempt, node and GPUs, failure class, exit code, and run_id of the current attempt.",
  kind: "observe",
  input: z.object({ job_id: idField("The job id") }),
  output: jobShape,
  run(ctx, { job_id }) {
    const j = getJob(ctx, job_id);
    const where = j.node_id ? ` on ${j.node_id} GPUs [${j.gpu_indices.join(",")}]` : "";
    const failure = j.failure_class
      ? `, failure ${j.failure_class}${j.reason ? ` (${j.reason})` : ""}`
      : "";
    return {
      data: { ...j },
      summary: `Job ${j.name} (${j.id}) is ${j.status}, attempt ${j.attempt} of ` +
        `${j.max_attempts}${where}${failure}.` +
        (j.run_id ? ` Its run: ${j.run_id} (get_run, diagnose_run, wait_for_run).` : ""),
    };
  },
});
