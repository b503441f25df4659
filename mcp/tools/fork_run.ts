/**
 * `fork_run`: submits a child of a run — the parent's job with args, env and config overridden,
 * optionally resuming from a checkpoint — recorded as its child in the lineage.
 */
import { forkRequest } from "../../protocol/lineage.ts";
import { forkRun } from "../../server/lineage/service.ts";
import { lastEventId } from "../../server/events/service.ts";
import { defineTool } from "../_tool.ts";
import { waitAction } from "./_format.ts";
import { jobShape, nextActions } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";

/** `fork_run`: `POST /api/runs/{id}/fork`. */
export const forkRunTool = defineTool({
  name: "fork_run",
  title: "Fork a run",
  description: "Submits a child of a run: the parent's command, working dir, GPUs and settings " +
    "with overrides applied — args {NAME: value} sets --NAME value in the command, env sets " +
    "variables, config sets values recorded on the run (and passed as GPUCTL_PARAM_NAME) — and " +
    "the parent recorded, so get_lineage shows the tree. from_checkpoint resumes from a " +
    "checkpoint (its path is the child's GPUCTL_RESUME_FROM). The child runs the code that is " +
    "in the working dir when it starts (recorded again). Needs a write token.",
  kind: "control",
  input: forkRequest.extend({ run_id: runIdField().describe("The parent run") }),
  output: jobShape.extend({ next_actions: nextActions }),
  run(ctx, { run_id, ...req }, call) {
    const since = lastEventId(ctx);
    const j = forkRun(ctx, run_id, req, call.principal.token_id);
    const wait = waitAction(j.id, since);
    return {
      data: { ...j, next_actions: [wait] },
      summary: `Queued job ${j.name} (${j.id}), a child of run ${run_id}` +
        (j.resume_from ? ` resuming from checkpoint ${j.resume_from.checkpoint_id}` : "") +
        `. Next: wait_for_run ${JSON.stringify(wait.args)}.`,
    };
  },
});
