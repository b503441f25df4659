/**
 * A token's budget: what the jobs and sweeps it submits may use. An admin sets it when the
 * token is created and may change it later; every face (REST, MCP, CLI, console) is held to
 * it by the same service functions.
 *
 * @module
 */
import { z } from "zod";

/** The budgets, in the order every face lists them. */
export const BUDGET_NAMES = [
  "max_gpus",
  "max_gpu_hours_24h",
  "max_queued_jobs",
  "max_trials_per_sweep",
  "max_wall_clock_s",
  "max_checkpoint_bytes",
] as const;
export type BudgetName = typeof BUDGET_NAMES[number];

/** What each budget limits, in words (help texts, refusals). */
export const BUDGET_MEANING: Record<BudgetName, string> = {
  max_gpus: "GPUs its jobs hold at once",
  max_gpu_hours_24h: "GPU-hours its jobs used in the last 24 hours",
  max_queued_jobs: "its jobs waiting in the queue",
  max_trials_per_sweep: "trials in one sweep",
  max_wall_clock_s: "seconds one job may run",
  max_checkpoint_bytes: "checkpoint bytes its jobs keep in one project",
};

const limit = (max: number, int = true) =>
  (int ? z.number().int() : z.number()).min(0).max(max).nullable().optional();

/**
 * A budget as an admin sends it: each field a limit, null (or absent at creation) for none.
 * On a change (`PUT /api/tokens/{id}/budget`), an absent field keeps its limit and null
 * removes it.
 */
export const tokenBudget = z.strictObject({
  max_gpus: limit(100_000).describe("GPUs the token's jobs hold at once"),
  max_gpu_hours_24h: limit(10_000_000, false).describe(
    "GPU-hours the token's jobs may use in any 24 hours (a job's GPUs × its running time)",
  ),
  max_queued_jobs: limit(1_000_000).describe("Jobs of the token waiting in the queue at once"),
  max_trials_per_sweep: limit(100_000).describe("Trials one sweep of the token may have"),
  max_wall_clock_s: limit(10 * 365 * 86_400, false).describe(
    "Seconds one job may run; a job past it is cancelled",
  ),
  max_checkpoint_bytes: limit(Number.MAX_SAFE_INTEGER).describe(
    "Checkpoint bytes the token's jobs may keep in one project",
  ),
});
export type TokenBudget = { [K in BudgetName]?: number | null };

/**
 * One budget as `whoami` and `get_status` show it: the limit, what is used now and what is
 * left (null where a budget has no running use: trials per sweep, wall-clock per job).
 */
export interface BudgetLine {
  limit: number;
  used: number | null;
  left: number | null;
}

/** Every budget of a token; null: no limit. */
export type BudgetStatus = {
  [K in BudgetName]: BudgetLine | null;
};

/** `dry_run: true`: what a submission would do, with nothing stored. */
export const dryRunField = z.boolean().optional().describe(
  "Only check: validation, where and when it would start, and the budget after; nothing is " +
    "stored",
);

/** Where and when a job would start (a forecast, never a promise). */
export interface JobPlacement {
  /** Whether it would start at once on a free slot. */
  starts_now: boolean;
  /** The node it would run on; null: no online node can run it (yet). */
  node_id: string | null;
  /** The GPUs it would get when it starts at once; null otherwise. */
  gpu_indices: number[] | null;
  /** When it may start (from the progress of running jobs); null: unknown. */
  estimated_start_at: string | null;
  /** Why it would wait, as the scheduler would say; null when it starts at once. */
  reason: string | null;
}
