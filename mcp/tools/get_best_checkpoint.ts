/**
 * `get_best_checkpoint`: the checkpoint to use of a run or a whole experiment, chosen by
 * evaluation results first, else the training metric, with the reason and the alternatives.
 */
import { z } from "zod";
import { recommendQuery } from "../../protocol/rest/checkpoints.ts";
import { validationError } from "../../server/errors.ts";
import { recommendCheckpoint } from "../../server/semantic/mod.ts";
import { defineTool } from "../_tool.ts";
import { semanticShape } from "../_shapes.ts";
import { withNextActions } from "./_format.ts";

/** `get_best_checkpoint`: `GET /api/checkpoints:recommend`. */
export const getBestCheckpointTool = defineTool({
  name: "get_best_checkpoint",
  title: "Best checkpoint",
  description: "The checkpoint to use, of one run or of a whole experiment: ranked by held-out " +
    "evaluation results first, else by the training metric; with the reason, the alternatives, " +
    "what was skipped and why (a file overwritten by another run, gone or incomplete is never " +
    "chosen), and next_actions (e.g. evaluate it to confirm). Name run_id or " +
    "experiment, not both.",
  kind: "semantic",
  input: z.object({
    run_id: recommendQuery.shape.run.describe("The run whose checkpoints to choose from"),
    experiment: recommendQuery.shape.experiment.describe(
      'Choose across every run of an experiment: "<project>/<experiment>"',
    ),
  }),
  output: semanticShape({
    checkpoint: z.looseObject({ checkpoint_id: z.string(), run_id: z.string() }).nullable(),
    basis: z.string().nullable().describe("evaluation or training_metric"),
    reason: z.string().describe("Why this checkpoint"),
  }),
  run(ctx, { run_id, experiment }) {
    const q = recommendQuery.safeParse({ run: run_id, experiment });
    if (!q.success) throw validationError("get_best_checkpoint arguments", q.error);
    const r = recommendCheckpoint(ctx, q.data);
    return { data: { ...r }, summary: withNextActions(r.summary, r.next_actions) };
  },
});
