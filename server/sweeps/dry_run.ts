/**
 * A sweep's dry run: the sweep checked and expanded as `createSweep` would store it (every
 * trial's submission valid, the budgets), where its first trials would start, and the budget
 * after, with nothing stored.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { BudgetStatus, JobPlacement } from "../../protocol/budgets.ts";
import type { ParamValue, SweepCreate } from "../../protocol/sweeps.ts";
import type { Context } from "../context.ts";
import { budgetOf } from "../budgets/service.ts";
import { forecastPlacement, withoutStoring } from "../jobs/dry_run.ts";
import { jobs as jobsDb } from "../db/mod.ts";
import { createSweep } from "./service.ts";

/** What `dry_run: true` on a sweep answers. */
export interface SweepDryRun {
  dry_run: true;
  stored: false;
  sweep: {
    name: string;
    project: string;
    experiment: string | null;
    method: "grid" | "random";
    metric: { key: string; direction: MetricDirection };
    max_parallel: number;
    trials: { index: number; params: Record<string, ParamValue> }[];
  };
  /** The trials submitted at once, each with its placement forecast. */
  first_trials: ({ index: number; name: string; gpus: number } & JobPlacement)[];
  budget_after: BudgetStatus | null;
  summary: string;
}

/** `dry_run: true` on `POST /api/sweeps` and `create_sweep`. */
export function dryRunSweep(ctx: Context, req: SweepCreate, by: string | null): SweepDryRun {
  return withoutStoring(ctx, () => {
    const sweep = createSweep(ctx, req, by);
    const launched = sweep.trials.filter((t) => t.job_id !== null);
    const placements = forecastPlacement(ctx, launched.map((t) => t.job_id!));
    const firstTrials = launched.map((t) => {
      const job = jobsDb.getJob(ctx.db, t.job_id!)!;
      const p = placements.get(job.id)!;
      if (p.starts_now) {
        jobsDb.updateJob(ctx.db, job.id, { status: "DISPATCHED" }, ctx.now().toISOString());
      }
      return { index: t.index, name: job.name, gpus: job.gpus, ...p };
    });
    const now = firstTrials.filter((t) => t.starts_now).length;
    return {
      dry_run: true as const,
      stored: false as const,
      sweep: {
        name: sweep.name,
        project: sweep.project,
        experiment: sweep.experiment,
        method: sweep.method,
        metric: sweep.metric,
        max_parallel: sweep.max_parallel,
        trials: sweep.trials.map((t) => ({ index: t.index, params: t.params })),
      },
      first_trials: firstTrials,
      budget_after: by ? budgetOf(ctx, by) : null,
      summary: `Sweep "${sweep.name}" would have ${sweep.trials.length} trials, ` +
        `${launched.length} submitted at once (${now} starting now, ` +
        `${launched.length - now} waiting). Nothing was stored.`,
    };
  });
}
