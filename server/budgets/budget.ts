/**
 * Budget decisions as pure functions: what a token has used, whether a submission or a sweep
 * fits its budget, which queued jobs wait for it, and which running jobs it stops. The
 * caller loads the use from the store and applies the answer.
 *
 * @module
 */
import {
  BUDGET_NAMES,
  type BudgetName,
  type BudgetStatus,
  type TokenBudget,
} from "../../protocol/budgets.ts";
import { fmtNumber } from "../../lib/format.ts";

/** The window GPU-hours are counted over. */
export const GPU_HOURS_WINDOW_MS = 24 * 3600_000;

/** What a token's jobs use now. */
export interface BudgetUsage {
  /** GPUs held by its DISPATCHED and RUNNING jobs. */
  gpus_in_use: number;
  /** Its QUEUED jobs. */
  queued_jobs: number;
  /** GPU-hours its jobs used in the last 24 hours. */
  gpu_hours_24h: number;
  /** Checkpoint bytes its jobs keep, per project. */
  checkpoint_bytes: Map<string, number>;
}

/** A refusal: the budget, what is used, what the request adds, and the limit. */
export interface BudgetRefusal {
  budget: BudgetName;
  used: number;
  requested: number;
  limit: number;
  /** The refusal in words, after "Cannot …: ". */
  problem: string;
}

/** The limit a budget sets; null when it sets none. */
export function limitOf(budget: TokenBudget | null, name: BudgetName): number | null {
  const v = budget?.[name];
  return typeof v === "number" ? v : null;
}

/** GPU-hours of the intervals inside the window that ends at `now`. */
export function gpuHours(
  intervals: { gpus: number; started_at: string; finished_at: string | null }[],
  now: number,
  windowMs = GPU_HOURS_WINDOW_MS,
): number {
  const from = now - windowMs;
  let ms = 0;
  for (const i of intervals) {
    const start = Math.max(Date.parse(i.started_at), from);
    const end = Math.min(i.finished_at ? Date.parse(i.finished_at) : now, now);
    if (end > start) ms += (end - start) * i.gpus;
  }
  return ms / 3600_000;
}

const hours = (h: number) => fmtNumber(Math.round(h * 1000) / 1000);

/** Each budget's limit, use and what is left. */
export function budgetStatus(budget: TokenBudget | null, usage: BudgetUsage): BudgetStatus {
  const line = (name: BudgetName, used: number | null) => {
    const limit = limitOf(budget, name);
    if (limit === null) return null;
    return { limit, used, left: used === null ? null : Math.max(0, limit - used) };
  };
  const biggestProject = Math.max(0, ...usage.checkpoint_bytes.values());
  const status = {} as BudgetStatus;
  for (const name of BUDGET_NAMES) {
    status[name] = line(
      name,
      name === "max_gpus"
        ? usage.gpus_in_use
        : name === "max_gpu_hours_24h"
        ? Math.round(usage.gpu_hours_24h * 1000) / 1000
        : name === "max_queued_jobs"
        ? usage.queued_jobs
        : name === "max_checkpoint_bytes"
        ? biggestProject
        : null,
    );
  }
  return status;
}

/**
 * Whether a job of `gpus` GPUs in `project` may be queued now. A job asking for more GPUs
 * than the token may ever hold could never start; the GPUs in use only make it wait (the
 * scheduler holds it), so they do not refuse it.
 */
export function submissionRefusal(
  budget: TokenBudget | null,
  usage: BudgetUsage,
  job: { gpus: number; project: string },
): BudgetRefusal | null {
  const maxGpus = limitOf(budget, "max_gpus");
  if (maxGpus !== null && job.gpus > maxGpus) {
    return {
      budget: "max_gpus",
      used: usage.gpus_in_use,
      requested: job.gpus,
      limit: maxGpus,
      problem: `${job.gpus} GPUs requested, more than the ${maxGpus} its jobs may hold at ` +
        `once (${usage.gpus_in_use} in use now)`,
    };
  }
  const maxQueued = limitOf(budget, "max_queued_jobs");
  if (maxQueued !== null && usage.queued_jobs + 1 > maxQueued) {
    return {
      budget: "max_queued_jobs",
      used: usage.queued_jobs,
      requested: 1,
      limit: maxQueued,
      problem: `${usage.queued_jobs} of its jobs queued, limit ${maxQueued}; wait for one to ` +
        "start or cancel one",
    };
  }
  const maxHours = limitOf(budget, "max_gpu_hours_24h");
  if (maxHours !== null && job.gpus > 0 && usage.gpu_hours_24h >= maxHours) {
    return {
      budget: "max_gpu_hours_24h",
      used: usage.gpu_hours_24h,
      requested: job.gpus,
      limit: maxHours,
      problem: `${hours(usage.gpu_hours_24h)} GPU-hours used in the last 24 hours, limit ` +
        `${hours(maxHours)}`,
    };
  }
  const maxBytes = limitOf(budget, "max_checkpoint_bytes");
  const bytes = usage.checkpoint_bytes.get(job.project) ?? 0;
  if (maxBytes !== null && bytes >= maxBytes) {
    return {
      budget: "max_checkpoint_bytes",
      used: bytes,
      requested: 0,
      limit: maxBytes,
      problem: `its jobs keep ${bytes} bytes of checkpoints in project "${job.project}", ` +
        `limit ${maxBytes}; delete old checkpoints or use another project`,
    };
  }
  return null;
}

/** Whether a sweep of `trials` trials fits. */
export function sweepRefusal(budget: TokenBudget | null, trials: number): BudgetRefusal | null {
  const max = limitOf(budget, "max_trials_per_sweep");
  if (max === null || trials <= max) return null;
  return {
    budget: "max_trials_per_sweep",
    used: 0,
    requested: trials,
    limit: max,
    problem: `${trials} trials, limit ${max} per sweep; narrow the grid or lower runs`,
  };
}

/** A queued job as the budget hold sees it, in queue order. */
export interface HoldCandidate {
  id: string;
  gpus: number;
  submitted_by: string | null;
}

/** A budgeted token's standing in this scheduling pass. */
export interface TokenStanding {
  name: string;
  budget: TokenBudget;
  gpus_in_use: number;
  gpu_hours_24h: number;
}

/**
 * Which queued jobs wait for their token's budget this pass, and why. Jobs are taken in
 * queue order; each one let through counts its GPUs as held, so the jobs let through never
 * hold more than the budget together, whichever of them placement then starts.
 */
export function holdOverBudget(
  queue: HoldCandidate[],
  tokens: Map<string, TokenStanding>,
): Map<string, string> {
  const held = new Map<string, string>();
  const inUse = new Map([...tokens].map(([id, t]) => [id, t.gpus_in_use]));
  for (const job of queue) {
    const t = job.submitted_by ? tokens.get(job.submitted_by) : undefined;
    if (!t || job.gpus === 0) continue;
    const maxHours = limitOf(t.budget, "max_gpu_hours_24h");
    if (maxHours !== null && t.gpu_hours_24h >= maxHours) {
      held.set(
        job.id,
        `Waiting for budget max_gpu_hours_24h of token "${t.name}": ` +
          `${hours(t.gpu_hours_24h)} GPU-hours used in the last 24 hours, limit ${hours(maxHours)}`,
      );
      continue;
    }
    const maxGpus = limitOf(t.budget, "max_gpus");
    const used = inUse.get(job.submitted_by!)!;
    if (maxGpus !== null && used + job.gpus > maxGpus) {
      held.set(
        job.id,
        `Waiting for budget max_gpus of token "${t.name}": ${used} GPUs held, ` +
          `${job.gpus} more requested, limit ${maxGpus}`,
      );
      continue;
    }
    inUse.set(job.submitted_by!, used + job.gpus);
  }
  return held;
}

/** A running job of a budgeted token. */
export interface RunningJob {
  id: string;
  name: string;
  project: string;
  started_at: string | null;
}

/** A running job to cancel: the budget it passed and the reason the job records. */
export interface Overrun {
  job_id: string;
  budget: BudgetName;
  reason: string;
}

/**
 * Which running jobs of a token passed its budget at `now`: a job past its wall-clock, and
 * every running GPU job once the token's GPU-hours of the last 24 hours reach their limit.
 */
export function overruns(
  token: { name: string; budget: TokenBudget; gpu_hours_24h: number },
  running: (RunningJob & { gpus: number })[],
  now: number,
): Overrun[] {
  const out: Overrun[] = [];
  const maxWall = limitOf(token.budget, "max_wall_clock_s");
  const maxHours = limitOf(token.budget, "max_gpu_hours_24h");
  for (const job of running) {
    if (!job.started_at) continue;
    const ran = (now - Date.parse(job.started_at)) / 1000;
    if (maxWall !== null && ran >= maxWall) {
      out.push({
        job_id: job.id,
        budget: "max_wall_clock_s",
        reason: `Cancelled: budget max_wall_clock_s of token "${token.name}": job ran ` +
          `${fmtNumber(Math.floor(ran))} s, limit ${fmtNumber(maxWall)} s`,
      });
    } else if (maxHours !== null && job.gpus > 0 && token.gpu_hours_24h >= maxHours) {
      out.push({
        job_id: job.id,
        budget: "max_gpu_hours_24h",
        reason: `Cancelled: budget max_gpu_hours_24h of token "${token.name}": ` +
          `${hours(token.gpu_hours_24h)} GPU-hours used in the last 24 hours, limit ` +
          `${hours(maxHours)}`,
      });
    }
  }
  return out;
}
