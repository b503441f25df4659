/**
 * Dry runs: a submission checked exactly as it would be stored (validation, budgets), where
 * and when it would start, and the budget after, then rolled back, so nothing is stored and
 * nobody hears of it (bus messages wait for a commit that never comes).
 */
import type { JobPlacement } from "../../protocol/budgets.ts";
import type { Job } from "../../protocol/objects.ts";
import type { JobSubmission } from "../../protocol/rest/jobs.ts";
import { jobs as jobsDb, nodes as nodesDb, runs as runsDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import type { Context } from "../context.ts";
import { budgetHolds, budgetOf } from "../budgets/service.ts";
import { capacityOf } from "../scheduler/loop.ts";
import { compareJobs, placeJobs, type QueuedJob } from "../scheduler/mod.ts";
import { estimateStarts, expectedEnd } from "../status/estimate_starts.ts";
import { submitJob } from "./service.ts";
import type { BudgetStatus } from "../../protocol/budgets.ts";

class RolledBack<T> {
  constructor(readonly value: T) {}
}

/** Runs `fn` in a transaction that is always rolled back, and returns what it returned. */
export function withoutStoring<T>(ctx: Context, fn: () => T): T {
  try {
    ctx.db.tx(() => {
      throw new RolledBack(fn());
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.value as T;
    throw err;
  }
  throw new Error("unreachable: a dry run's transaction committed");
}

const queuedJob = (j: JobState): QueuedJob => ({
  id: j.id,
  priority: j.priority,
  submit_seq: j.seq,
  gpus: j.gpus,
  node: j.node,
});

/**
 * Where and when each of `jobIds` (stored QUEUED in the open transaction) would start: the
 * scheduler's placement over the queue as it stands (online nodes, budgets, dependencies that
 * have not succeeded count as waiting), else the status overview's forecast.
 */
export function forecastPlacement(ctx: Context, jobIds: string[]): Map<string, JobPlacement> {
  const now = ctx.now();
  const active = jobsDb.jobsInStatus(ctx.db, ["QUEUED", "DISPATCHED", "RUNNING"]);
  const holding = active.filter((j) => j.status !== "QUEUED" && j.node_id !== null);
  const queued = active.filter((j) =>
    j.status === "QUEUED" && !(j.not_before && Date.parse(j.not_before) > now.getTime())
  ).sort((a, b) => compareJobs(queuedJob(a), queuedJob(b)));
  const unmet = (j: JobState) =>
    j.after.some((id) => jobsDb.getJob(ctx.db, id)?.status !== "SUCCEEDED");
  const held = budgetHolds(ctx, queued, active);
  const ready = queued.filter((j) => !held.has(j.id) && !unmet(j));
  const nodes = nodesDb.listNodes(ctx.db);
  const placement = placeJobs(
    ready.map(queuedJob),
    capacityOf(nodes, holding, () => true, () => new Map()),
  );
  const online = nodes.filter((n) => n.status === "ONLINE");
  const forecast = estimateStarts(
    ready.map((j) => ({ id: j.id, gpus: j.gpus, node: j.node })),
    online.map((n) => ({ id: n.id, gpus: n.gpus.length, cpu_slots: n.cpu_slots })),
    holding.map((j) => {
      const run = j.run_id ? runsDb.getRun(ctx.db, j.run_id) : null;
      return {
        node_id: j.node_id!,
        gpus: j.gpu_indices.length,
        ends_at: run ? expectedEnd(run, now.getTime()) : null,
      };
    }),
    now.getTime(),
  );
  const out = new Map<string, JobPlacement>();
  for (const id of jobIds) {
    const assigned = placement.assignments.find((a) => a.job_id === id);
    if (assigned) {
      out.set(id, {
        starts_now: true,
        node_id: assigned.node_id,
        gpu_indices: assigned.gpu_indices,
        estimated_start_at: now.toISOString(),
        reason: null,
      });
      continue;
    }
    const f = forecast.find((x) => x.job_id === id);
    const job = queued.find((j) => j.id === id);
    // The job of a dry run is never stored: its id means nothing to the caller.
    const why = placement.waiting.find((w) => w.job_id === id)?.reason
      .replaceAll(`job "${id}"`, "it");
    out.set(id, {
      starts_now: false,
      node_id: f?.node_id ?? null,
      gpu_indices: null,
      estimated_start_at: f?.starts_at != null ? new Date(f.starts_at).toISOString() : null,
      reason: held.get(id) ?? why ??
        (job && unmet(job) ? "Waiting for the jobs it runs after to succeed" : null),
    });
  }
  return out;
}

/** A dry run of a job submission: the job as it would be stored, less its id. */
export interface JobDryRun {
  dry_run: true;
  stored: false;
  job: Omit<Job, "id" | "run_id">;
  placement: JobPlacement;
  /** The submitting token's budget once the job is queued (or started); null: no budget. */
  budget_after: BudgetStatus | null;
  summary: string;
}

/**
 * `dry_run: true` on a submission: the same checks and refusals as `submitJob` (it runs it),
 * the placement forecast and the budget after, and nothing stored.
 */
export function dryRunJob(
  ctx: Context,
  s: JobSubmission,
  by: string | null,
): JobDryRun {
  return withoutStoring(ctx, () => {
    const job = submitJob(ctx, s, "TRAIN", { submitted_by: by });
    const placement = forecastPlacement(ctx, [job.id]).get(job.id)!;
    if (placement.starts_now) {
      // As if the scheduler had taken it: its GPUs held, no longer queued.
      jobsDb.updateJob(ctx.db, job.id, { status: "DISPATCHED" }, ctx.now().toISOString());
    }
    const { id: _id, run_id: _run, ...rest } = job;
    return {
      dry_run: true as const,
      stored: false as const,
      job: rest,
      placement,
      budget_after: by ? budgetOf(ctx, by) : null,
      summary: dryRunSummary(job.name, job.gpus, placement),
    };
  });
}

/** One sentence: would it start, where, when. */
export function dryRunSummary(name: string, gpus: number, p: JobPlacement): string {
  const what = `Job "${name}" (${gpus} GPU${gpus === 1 ? "" : "s"})`;
  if (p.starts_now) {
    return `${what} would start now on ${p.node_id}, GPUs [${p.gpu_indices!.join(", ")}]. ` +
      "Nothing was stored.";
  }
  const when = p.estimated_start_at
    ? `is expected to start ${p.estimated_start_at}${p.node_id ? ` on ${p.node_id}` : ""}`
    : "has no estimated start";
  return `${what} would wait in the queue and ${when}` +
    (p.reason ? ` (${p.reason})` : "") + ". Nothing was stored.";
}
