/**
 * `diagnose_run`: a run's health in one answer — progress and ETA, the primary metric's trend,
 * anomalies, GPU use, the likely cause of a failure — with next actions.
 */
import { z } from "zod";
import { diagnoseRunById } from "../../server/semantic/mod.ts";
import { defineTool } from "../_tool.ts";
import { semanticShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";
import { withNextActions } from "./_format.ts";

/** `diagnose_run`: `GET /api/runs/{id}/diagnosis`. */
export const diagnoseRunTool = defineTool({
  name: "diagnose_run",
  title: "Diagnose a run",
  description: "The health of a run in one answer: progress, steps/s and ETA, the primary " +
    "metric's trend (improving, flat, worsening, with the numbers), anomalies (NaN, spikes, " +
    "overfitting, stalls, idle GPUs), GPU use, and for a failed run the likely cause; with " +
    "next_actions.",
  kind: "semantic",
  input: z.object({ run_id: runIdField() }),
  output: semanticShape({
    run_id: z.string(),
    status: z.string(),
    anomalies: z.array(z.looseObject({ type: z.string(), message: z.string() })),
  }),
  run(ctx, { run_id }) {
    const d = diagnoseRunById(ctx, run_id);
    return { data: { ...d }, summary: withNextActions(d.summary, d.next_actions) };
  },
});
