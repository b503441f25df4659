/**
 * `create_sweep`: starts a hyperparameter sweep (a job per trial, over a grid or a seeded random
 * sample, optionally halving at rungs); `sweepShape` is what every sweep tool answers.
 */
import { z } from "zod";
import { sweepCreate } from "../../protocol/sweeps.ts";
import { createSweep } from "../../server/sweeps/service.ts";
import { defineTool } from "../_tool.ts";
import { nextActions } from "../_shapes.ts";

/** What the sweep tools answer: the sweep, its trials, best trial and importance. */
export const sweepShape = z.looseObject({
  id: z.string(),
  name: z.string(),
  status: z.string(),
  metric: z.looseObject({ key: z.string(), direction: z.string() }),
  counts: z.record(z.string(), z.number()),
  trials: z.array(z.looseObject({ index: z.number(), status: z.string() })),
  best: z.looseObject({ index: z.number(), value: z.number() }).nullable(),
  importance: z.array(z.looseObject({ parameter: z.string() })),
  summary: z.string(),
  next_actions: nextActions,
});

/** `create_sweep`: `POST /api/sweeps`. */
export const createSweepTool = defineTool({
  name: "create_sweep",
  title: "Start a sweep",
  description: "Starts a hyperparameter sweep: one ordinary job per trial, made from `base` " +
    "(a submit_job submission) with the trial's parameters appended as --NAME VALUE, over a " +
    "grid or a seeded random sample; at most max_parallel at once; with early_stop, losing " +
    "trials are cancelled at each rung (successive halving). Returns the sweep; follow with " +
    "wait_for_run {sweep_id} and get_sweep. Needs a write token.",
  kind: "control",
  input: sweepCreate,
  output: sweepShape,
  run(ctx, args) {
    const s = createSweep(ctx, args);
    return { data: { ...s }, summary: s.summary };
  },
});
