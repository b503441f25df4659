/**
 * `explain_failure`: why a FAILED or LOST run failed — the likely cause with its evidence,
 * suggested fixes, whether a retry would help, and the checkpoint to resume from.
 */
import { z } from "zod";
import { explainRunFailure } from "../../server/semantic/mod.ts";
import { defineTool } from "../_tool.ts";
import { semanticShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";
import { withNextActions } from "./_format.ts";

/** `explain_failure`: `GET /api/runs/{id}/failure`. */
export const explainFailureTool = defineTool({
  name: "explain_failure",
  title: "Explain a failure",
  description: "Why a FAILED or LOST run failed: the likely cause (OOM, NaN, import error, " +
    "lost node, …) with confidence and evidence (log lines with their seq), suggested fixes, " +
    "whether a retry would help, and the last checkpoint to resume from; with next_actions.",
  kind: "semantic",
  input: z.object({ run_id: runIdField() }),
  output: semanticShape({
    run_id: z.string(),
    likely_cause: z.string(),
    suggested_fixes: z.array(z.string()),
    retry: z.string().describe("fails_again, may_help, not_a_failure or unknown"),
  }),
  run(ctx, { run_id }) {
    const f = explainRunFailure(ctx, run_id);
    return { data: { ...f }, summary: withNextActions(f.summary, f.next_actions) };
  },
});
