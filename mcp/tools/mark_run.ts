/** `mark_run`: marks a run kept or discarded with a one-line reason; the latest mark counts. */
import { markRequest } from "../../protocol/lineage.ts";
import { markRun } from "../../server/lineage/service.ts";
import { defineTool } from "../_tool.ts";
import { runShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";

/** `mark_run`: `POST /api/runs/{id}/mark`. */
export const markRunTool = defineTool({
  name: "mark_run",
  title: "Mark a run kept or discarded",
  description: 'Marks a run "kept" (a line worth following: fork the next experiments from it) ' +
    'or "discarded" (a dead end), with a one-line reason quoting the numbers. The latest mark ' +
    "counts; get_lineage shows marks in the tree and names the best kept run. Needs a write token.",
  kind: "control",
  annotations: { idempotentHint: true },
  input: markRequest.extend({ run_id: runIdField() }),
  output: runShape,
  run(ctx, { run_id, ...req }, call) {
    const r = markRun(ctx, run_id, req, call.principal.name);
    return {
      data: { ...r },
      summary: `Run ${r.name} (${r.id}) marked ${req.mark}: ${req.reason}.`,
    };
  },
});
