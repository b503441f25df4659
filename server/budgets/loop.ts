/**
 * The budget loop: cancels running jobs that passed their token's budget (a job past its
 * wall-clock; every GPU job of a token whose GPU-hours of the last 24 hours reached their
 * limit), on a timer and when jobs change. `runOnce()` reads the injected clock, so tests
 * drive it with a fake one.
 */
import { topics } from "../bus/bus.ts";
import { budgets as budgetsDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { PassLoop } from "../pass_loop.ts";
import { cancelJob } from "../jobs/service.ts";
import { GPU_HOURS_WINDOW_MS, gpuHours, overruns } from "./budget.ts";

export interface BudgetLoopOptions {
  /** @default 5000 */
  intervalMs?: number;
}

/** What one pass over the budgets did. */
export interface BudgetPass {
  cancelled: number;
}

/**
 * Cancels the running jobs that passed their token's budget: past the wall-clock limit, or
 * while the token's GPU-hours of the last 24 hours are at their limit. Each job's reason
 * names the budget.
 */
export function enforceBudgets(ctx: Context): BudgetPass {
  const now = ctx.now().getTime();
  const since = new Date(now - GPU_HOURS_WINDOW_MS).toISOString();
  let cancelled = 0;
  for (const t of budgetsDb.budgetedTokens(ctx.db)) {
    if (t.budget.max_wall_clock_s == null && t.budget.max_gpu_hours_24h == null) continue;
    const running = budgetsDb.runningJobs(ctx.db, t.id);
    if (running.length === 0) continue;
    const intervals = budgetsDb.gpuIntervals(ctx.db, t.id, since);
    const decided = overruns(
      { name: t.name, budget: t.budget, gpu_hours_24h: gpuHours(intervals, now) },
      running,
      now,
    );
    for (const o of decided) {
      try {
        cancelJob(ctx, o.job_id, `budget ${o.budget}`, o.reason);
        cancelled++;
      } catch (err) {
        // It ended meanwhile: nothing to stop.
        ctx.log.info("budget overrun already ended", { job: o.job_id, error: String(err) });
      }
    }
  }
  return { cancelled };
}

export class BudgetLoop {
  #ctx: Context;
  #loop: PassLoop;

  constructor(ctx: Context, options: BudgetLoopOptions = {}) {
    this.#ctx = ctx;
    this.#loop = new PassLoop(ctx.log, {
      name: "budget",
      intervalMs: options.intervalMs ?? 5000,
      pass: () => this.runOnce(),
      wake: (trigger) => [ctx.bus.subscribe(topics.jobs, () => trigger())],
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): void {
    this.#loop.stop();
  }

  /** Asks for a pass soon; triggers meanwhile join it. */
  trigger(): void {
    this.#loop.trigger();
  }

  /** One pass; logs only when it cancelled something. */
  runOnce(): BudgetPass {
    const pass = enforceBudgets(this.#ctx);
    if (pass.cancelled) this.#ctx.log.info("budget overruns cancelled", { ...pass });
    return pass;
  }
}
