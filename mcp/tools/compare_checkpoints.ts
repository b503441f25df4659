/**
 * `compare_checkpoints`: a run's checkpoints ranked by evaluation results, else by the training
 * metric at their step, with the excluded ones and why, and which to evaluate next.
 */
import { z } from "zod";
import { compareCheckpointsOfRun } from "../../server/semantic/mod.ts";
import { defineTool } from "../_tool.ts";
import { semanticShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";
import { withNextActions } from "./_format.ts";

/** `compare_checkpoints`: `GET /api/runs/{id}/checkpoints:compare`. */
export const compareCheckpointsTool = defineTool({
  name: "compare_checkpoints",
  title: "Compare a run's checkpoints",
  description: "A run's checkpoints ranked: by held-out evaluation results when any exist, " +
    "else by the training metric at each checkpoint's step; excluded ones (overwritten by " +
    "another run, gone, incomplete, saved after a NaN) say why; with next_actions (which to evaluate).",
  kind: "semantic",
  input: z.object({ run_id: runIdField() }),
  output: semanticShape({
    run_id: z.string(),
    basis: z.string().describe("evaluation, training_metric or none"),
    checkpoints: z.array(z.looseObject({ checkpoint_id: z.string(), rank: z.number().nullable() })),
  }),
  run(ctx, { run_id }) {
    const c = compareCheckpointsOfRun(ctx, run_id);
    return { data: { ...c }, summary: withNextActions(c.summary, c.next_actions) };
  },
});
