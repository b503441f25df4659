/** `get_sweep`: a sweep's trials with their parameters and status, its best trial, importance. */
import { z } from "zod";
import { getSweep } from "../../server/sweeps/service.ts";
import { defineTool } from "../_tool.ts";
import { idField } from "./_fields.ts";
import { sweepShape } from "./create_sweep.ts";

/** `get_sweep`: `GET /api/sweeps/{id}`. */
export const getSweepTool = defineTool({
  name: "get_sweep",
  title: "Sweep",
  description: "A sweep's state: each trial with its parameters, status (STOPPED at a rung " +
    "with why) and metric; the best trial so far with its run_id; each parameter's rank " +
    "correlation with the final metric; and next_actions (the best trial's checkpoint).",
  kind: "observe",
  input: z.object({ sweep_id: idField("The sweep id (s-…)") }),
  output: sweepShape,
  run(ctx, { sweep_id }) {
    const s = getSweep(ctx, sweep_id);
    return { data: { ...s }, summary: s.summary };
  },
});
