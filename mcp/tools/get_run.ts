import { z } from "zod";
import { getRun } from "../../server/runs/service.ts";
import { defineTool } from "../_tool.ts";
import { runShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";
import { metricText } from "./_format.ts";

/** `get_run`: `GET /api/runs/{id}`. */
export const getRunTool = defineTool({
  name: "get_run",
  title: "Run",
  description: "One run: status, step/epoch/max_steps, config, environment snapshot, times, " +
    "and its primary metric (key, direction, latest, best, best_step). For its health and what " +
    "to do next use diagnose_run.",
  kind: "observe",
  input: z.object({ run_id: runIdField() }),
  output: runShape,
  run(ctx, { run_id }) {
    const r = getRun(ctx, run_id);
    const progress = r.step !== null
      ? ` at step ${r.step}${r.max_steps ? ` of ${r.max_steps}` : ""}`
      : "";
    return {
      data: { ...r },
      summary: `Run ${r.name} (${r.id}) of ${r.project}${r.experiment ? `/${r.experiment}` : ""} ` +
        `is ${r.status}${progress}${metricText(r.primary_metric)}.`,
    };
  },
});
