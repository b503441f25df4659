/**
 * Budgets: the limits an admin sets on a token, the use its jobs make, the refusals every face
 * gets from the same functions (submit, sweep, fork, evaluate, the console's form), the queued
 * jobs the scheduler holds, and the running jobs a pass over the budgets cancels.
 */
import type { BudgetStatus, TokenBudget } from "../../protocol/budgets.ts";
import type { TokenInfo } from "../../protocol/objects.ts";
import { budgets as budgetsDb, tokens as tokensDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import type { Context } from "../context.ts";
import { BudgetExceededError, notFound, quoted } from "../errors.ts";
import { compareJobs } from "../scheduler/mod.ts";
import {
  type BudgetRefusal,
  budgetStatus,
  type BudgetUsage,
  GPU_HOURS_WINDOW_MS,
  gpuHours,
  holdOverBudget,
  submissionRefusal,
  sweepRefusal,
  type TokenStanding,
} from "./budget.ts";

/** What a token's jobs use now. */
export function usageOf(ctx: Context, tokenId: string): BudgetUsage {
  const now = ctx.now().getTime();
  const counts = budgetsDb.jobCounts(ctx.db, tokenId);
  const since = new Date(now - GPU_HOURS_WINDOW_MS).toISOString();
  return {
    gpus_in_use: (counts.get("DISPATCHED")?.gpus ?? 0) + (counts.get("RUNNING")?.gpus ?? 0),
    queued_jobs: counts.get("QUEUED")?.jobs ?? 0,
    gpu_hours_24h: gpuHours(budgetsDb.gpuIntervals(ctx.db, tokenId, since), now),
    checkpoint_bytes: budgetsDb.checkpointBytes(ctx.db, tokenId),
  };
}

/** A token's budget with its use: the limit, used and left of each; null without a budget. */
export function budgetOf(ctx: Context, tokenId: string): BudgetStatus | null {
  const budget = budgetsDb.getBudget(ctx.db, tokenId);
  return budget ? budgetStatus(budget, usageOf(ctx, tokenId)) : null;
}

function refused(
  action: string,
  token: { id: string; name: string },
  r: BudgetRefusal,
): BudgetExceededError {
  return new BudgetExceededError(
    `Cannot ${action}: budget ${r.budget} of token ${quoted(token.name)}: ${r.problem}` +
      " (an admin can change it: gpuctl token budget)",
    { budget: r.budget, used: r.used, requested: r.requested, limit: r.limit, token: token.name },
  );
}

function tokenNamed(ctx: Context, tokenId: string): { id: string; name: string } {
  return { id: tokenId, name: tokensDb.getToken(ctx.db, tokenId)?.name ?? tokenId };
}

/**
 * Why the token may not queue this job now, or null. Inside the submission's transaction, so
 * two submissions cannot both take the last place.
 */
export function submissionRefusalOf(
  ctx: Context,
  tokenId: string,
  job: { gpus: number; project: string },
): BudgetRefusal | null {
  const budget = budgetsDb.getBudget(ctx.db, tokenId);
  if (!budget) return null;
  return submissionRefusal(budget, usageOf(ctx, tokenId), job);
}

/** Throws `BudgetExceeded` when the token may not queue this job now. */
export function assertSubmissionFits(
  ctx: Context,
  tokenId: string,
  job: { name: string; gpus: number; project: string },
  action = `submit job ${quoted(job.name)}`,
): void {
  const r = submissionRefusalOf(ctx, tokenId, job);
  if (r) throw refused(action, tokenNamed(ctx, tokenId), r);
}

/** Throws `BudgetExceeded` when a sweep of `trials` trials, or its first trial, does not fit. */
export function assertSweepFits(
  ctx: Context,
  tokenId: string,
  sweep: { name: string; trials: number; gpus: number; project: string },
): void {
  const budget = budgetsDb.getBudget(ctx.db, tokenId);
  if (!budget) return;
  const r = sweepRefusal(budget, sweep.trials) ??
    submissionRefusal(budget, usageOf(ctx, tokenId), sweep);
  if (r) throw refused(`create sweep ${quoted(sweep.name)}`, tokenNamed(ctx, tokenId), r);
}

/** A token with its budget (what an admin sees). */
export type BudgetedToken = TokenInfo & { budget: TokenBudget | null };

/**
 * `PUT /api/tokens/{id}/budget`: changes a token's budget. A field given sets its limit, null
 * removes it, an absent one keeps it. Queued and running jobs are judged by the new budget
 * from the next pass on.
 */
export function changeBudget(ctx: Context, tokenId: string, change: TokenBudget): BudgetedToken {
  return ctx.db.tx(() => {
    const token = tokensDb.getToken(ctx.db, tokenId);
    if (!token) throw notFound("Token", tokenId);
    const merged: TokenBudget = { ...budgetsDb.getBudget(ctx.db, tokenId), ...change };
    for (const k of Object.keys(merged) as (keyof TokenBudget)[]) {
      if (merged[k] === null || merged[k] === undefined) delete merged[k];
    }
    const budget = Object.keys(merged).length ? merged : null;
    budgetsDb.setBudget(ctx.db, tokenId, budget);
    const { secret_hash: _h, ...info } = token;
    return { ...info, budget };
  });
}

/** Sets the budget of a token just created (no limit where the budget has none). */
export function setBudgetAtCreate(ctx: Context, tokenId: string, budget: TokenBudget): void {
  const set = Object.fromEntries(
    Object.entries(budget).filter(([, v]) => v !== null && v !== undefined),
  );
  if (Object.keys(set).length) budgetsDb.setBudget(ctx.db, tokenId, set);
}

/**
 * Which of the queued jobs wait for their token's budget this pass (job id → reason), taken
 * in queue order; `active` holds the jobs holding slots now. Costs nothing while no queued
 * job's token has a budget.
 */
export function budgetHolds(
  ctx: Context,
  queued: JobState[],
  active: JobState[],
): Map<string, string> {
  const tokens = new Set(queued.map((j) => j.submitted_by).filter((t): t is string => !!t));
  if (tokens.size === 0) return new Map();
  const standings = new Map<string, TokenStanding>();
  const now = ctx.now().getTime();
  const since = new Date(now - GPU_HOURS_WINDOW_MS).toISOString();
  for (const t of budgetsDb.budgetedTokens(ctx.db)) {
    if (!tokens.has(t.id)) continue;
    standings.set(t.id, {
      name: t.name,
      budget: t.budget,
      gpus_in_use: active.filter((j) => j.submitted_by === t.id && j.status !== "QUEUED")
        .reduce((n, j) => n + j.gpus, 0),
      gpu_hours_24h: gpuHours(budgetsDb.gpuIntervals(ctx.db, t.id, since), now),
    });
  }
  if (standings.size === 0) return new Map();
  const key = (j: JobState) => ({
    id: j.id,
    priority: j.priority,
    submit_seq: j.seq,
    gpus: j.gpus,
    node: j.node,
  });
  const ordered = queued.filter((j) => j.submitted_by && standings.has(j.submitted_by))
    .sort((a, b) => compareJobs(key(a), key(b)));
  return holdOverBudget(
    ordered.map((j) => ({ id: j.id, gpus: j.gpus, submitted_by: j.submitted_by })),
    standings,
  );
}
