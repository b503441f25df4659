/**
 * `create_sweep`: starts a hyperparameter sweep (a job per trial, over a grid or a seeded random
 * sample, optionally halving at rungs); `sweepShape` is what every sweep tool answers.
 */
import { z } from "zod";
import { sweepCreateRequest } from "../../protocol/sweeps.ts";
import { createSweep } from "../../server/sweeps/service.ts";
import { dryRunSweep } from "../../server/sweeps/dry_run.ts";
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
    "wait_for_run {sweep_id} and get_sweep. dry_run: true only checks it (the trials, the " +
    "budget, where the first trials would start, the budget after) and stores nothing. A " +
    "sweep past the token's budget (max_trials_per_sweep, …) is refused with BudgetExceeded. " +
    "Needs a write token.",
  kind: "control",
  input: sweepCreateRequest,
  output: sweepShape.partial().extend({
    dry_run: z.boolean().optional().describe("true: only checked, nothing stored"),
    first_trials: z.array(z.looseObject({ index: z.number(), starts_now: z.boolean() }))
      .optional().describe("Dry run: the trials submitted at once and where they would start"),
    budget_after: z.record(z.string(), z.unknown()).nullable().optional()
      .describe("Dry run: the token's budget after: limit, used, left of each"),
  }),
  run(ctx, { dry_run, ...args }, call) {
    if (dry_run) {
      const plan = dryRunSweep(ctx, args, call.principal.token_id);
      return { data: { ...plan }, summary: plan.summary };
    }
    const s = createSweep(ctx, args, call.principal.token_id);
    return { data: { ...s }, summary: s.summary };
  },
});
