/** `list_checkpoints`: a run's checkpoints by step, with their metrics, evaluations and state. */
import { z } from "zod";
import { listCheckpoints } from "../../server/runs/service.ts";
import { defineTool } from "../_tool.ts";
import { checkpointShape, pageOf } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";

/** `list_checkpoints`: `GET /api/runs/{id}/checkpoints`. */
export const listCheckpointsTool = defineTool({
  name: "list_checkpoints",
  title: "Checkpoints of a run",
  description: "A run's checkpoints by step: id, step, path, size, the metrics at that step and " +
    "their evaluations. To rank them use compare_checkpoints; to pick one, get_best_checkpoint.",
  kind: "observe",
  input: z.object({ run_id: runIdField() }),
  output: pageOf(checkpointShape, "The checkpoints by step"),
  run(ctx, { run_id }) {
    const page = listCheckpoints(ctx, run_id);
    const shown = page.items.map((c) =>
      `${c.id} step ${c.step ?? "?"}${
        c.evaluations.length ? ` (${c.evaluations.length} evaluation(s))` : ""
      }` +
      (c.state !== "valid" ? ` (${c.state})` : "")
    );
    return {
      data: { ...page },
      summary: page.items.length
        ? `${page.items.length} checkpoint(s) of run ${run_id}: ${shown.join("; ")}.`
        : `Run ${run_id} has no checkpoints yet.`,
    };
  },
});
