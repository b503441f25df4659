/**
 * The state changes of a job's attempt after it was queued: dispatched to a node, running,
 * ended (and maybe requeued), lost with its node, reattached. Each runs inside the caller's
 * transaction and tells the scheduler that capacity or the queue changed.
 */
import type { FailureClass } from "../../protocol/vocabulary.ts";
import { jobs as jobsDb, lineage as lineageDb, runs as runsDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { isInfrastructureFailure, retryDecision } from "../scheduler/mod.ts";
import { failEvaluationsOfJob } from "../evaluations/record_results.ts";
import { diagnoseFailure } from "../failure/mod.ts";
import { loadFailureInput } from "../semantic/load.ts";
import { getRun } from "../runs/service.ts";

/** The grace period between SIGTERM and SIGKILL when a job does not set one. */
export const DEFAULT_GRACE_S = 5;

function changed(ctx: Context, jobId: string, reason: string): void {
  ctx.db.afterCommit(() => ctx.bus.publish(topics.jobs, { job_id: jobId, reason }));
}

/** Places a queued job on a node: creates the attempt's run and marks the job DISPATCHED. */
export function dispatchJob(
  ctx: Context,
  job: JobState,
  nodeId: string,
  gpuIndices: number[],
): { run_id: string } {
  const at = ctx.now().toISOString();
  const runId = ctx.newId("r");
  runsDb.insertRun(ctx.db, {
    id: runId,
    job_id: job.id,
    attempt: job.attempt,
    project: job.project,
    experiment: job.experiment,
    name: job.attempt === 1 ? job.name : `${job.name} #${job.attempt}`,
    source: "job",
    status: "QUEUED",
    config: job.config,
    env: {},
    max_steps: job.max_steps,
    created_at: at,
    started_at: null,
  });
  runsDb.updateRun(ctx.db, runId, { node_id: nodeId, gpu_indices: gpuIndices }, at);
  if (job.parent_run || job.resume_from) {
    lineageDb.setRunLineage(
      ctx.db,
      runId,
      job.parent_run,
      job.resume_from?.checkpoint_id ?? null,
    );
  }
  jobsDb.updateJob(
    ctx.db,
    job.id,
    {
      status: "DISPATCHED",
      node_id: nodeId,
      gpu_indices: gpuIndices,
      run_id: runId,
      reason: null,
      not_before: null,
    },
    at,
    ["QUEUED"],
  );
  const gpus = gpuIndices.length ? `GPU ${gpuIndices.join(",")}` : "no GPU";
  emitEvent(ctx, {
    type: "JOB_DISPATCHED",
    severity: "info",
    job_id: job.id,
    run_id: runId,
    node_id: nodeId,
    message:
      `Job "${job.name}" (${job.id}) attempt ${job.attempt} dispatched to ${nodeId}, ${gpus}`,
    data: { attempt: job.attempt, gpu_indices: gpuIndices },
  });
  return { run_id: runId };
}

/** What a Slurm agent says about an attempt it handed to Slurm (all null for other runners). */
export interface SlurmPlacement {
  slurm_job_id: string | null;
  /** The host Slurm started it on. */
  node_name: string | null;
  /** The GPU indices Slurm bound on that host. */
  gpu_indices: number[] | null;
}

/**
 * The attempt waits in Slurm's queue: the job stays DISPATCHED, with Slurm's reason
 * (`Resources`, `Priority` …) as its own and the Slurm job id on the run.
 */
export function markPending(
  ctx: Context,
  job: JobState,
  pending: { slurm_job_id: string | null; reason: string | null },
  at: Date,
): void {
  if (job.status !== "DISPATCHED") return;
  const iso = at.toISOString();
  if (job.run_id) {
    // Slurm has bound no GPU yet: the indices the pool was given were a count only.
    runsDb.updateRun(ctx.db, job.run_id, {
      gpu_indices: [],
      ...(pending.slurm_job_id ? { slurm_job_id: pending.slurm_job_id } : {}),
    }, iso);
  }
  const reason = pending.reason ?? "waiting in the cluster scheduler's queue";
  if (reason === job.reason && job.gpu_indices.length === 0) return;
  jobsDb.updateJob(ctx.db, job.id, { reason, gpu_indices: [] }, iso, ["DISPATCHED"]);
  changed(ctx, job.id, "pending");
}

/** The agent started the attempt's process (for a Slurm pool: Slurm started the job). */
export function markRunning(
  ctx: Context,
  job: JobState,
  pid: number | null,
  at: Date,
  slurm: SlurmPlacement | null = null,
): void {
  const iso = at.toISOString();
  if (job.status === "RUNNING") return;
  const gpus = slurm?.gpu_indices ?? null;
  jobsDb.updateJob(
    ctx.db,
    job.id,
    {
      status: "RUNNING",
      started_at: iso,
      // A Slurm pool's GPUs are Slurm's to choose: the job shows the ones it bound.
      ...(gpus !== null ? { gpu_indices: gpus } : {}),
      ...(slurm ? { reason: null } : {}),
    },
    iso,
    ["DISPATCHED"],
  );
  if (job.run_id) {
    runsDb.updateRun(ctx.db, job.run_id, {
      status: "RUNNING",
      started_at: iso,
      ...(gpus !== null ? { gpu_indices: gpus } : {}),
      ...(slurm?.slurm_job_id ? { slurm_job_id: slurm.slurm_job_id } : {}),
      ...(slurm?.node_name ? { slurm_node: slurm.node_name } : {}),
    }, iso);
  }
  const where = slurm?.node_name
    ? `${job.node_id} (Slurm job ${slurm.slurm_job_id ?? "?"} on ${slurm.node_name}` +
      (gpus !== null ? `, GPU ${gpus.join(",") || "none"})` : ")")
    : job.node_id;
  emitEvent(ctx, {
    type: "RUN_STARTED",
    severity: "info",
    job_id: job.id,
    run_id: job.run_id,
    node_id: job.node_id,
    message: `Run of job "${job.name}" (${job.id}) attempt ${job.attempt} started on ${where}` +
      (pid ? ` as pid ${pid}` : ""),
    data: {
      attempt: job.attempt,
      pid,
      ...(slurm
        ? { slurm_job_id: slurm.slurm_job_id, slurm_node: slurm.node_name, gpu_indices: gpus }
        : {}),
    },
  });
}

/** How an attempt ended, as the agent (or the server, for a lost node) saw it. */
export interface AttemptEnd {
  outcome: "SUCCEEDED" | "FAILED" | "CANCELLED" | "LOST";
  failure_class: FailureClass | null;
  exit_code?: number | null;
  signal?: string | null;
  reason: string;
  at: Date;
  /**
   * LOST only: when the next attempt may start. `until` is the silent node's lease expiry
   * (its agent has surely stopped the old copy by then); null when nothing proves it will
   * stop (the agent holds no lease), and `why` says so.
   */
  lease?: LeaseHold;
}

/** When a lost attempt's successor may start (see {@linkcode AttemptEnd.lease}). */
export type LeaseHold = { until: Date } | { until: null; why: string };

/** `12:04:10 UTC`: the clock time a person reads in a job's reason. */
export function clockTime(at: Date): string {
  return `${at.toISOString().slice(11, 19)} UTC`;
}

/**
 * Why a lost attempt is not requeued by itself, or null when the retry policy decides: the
 * job waits for its node (`on_node_lost: "wait"`), or the node's agent holds no lease.
 */
function keptLost(job: JobState, end: AttemptEnd): string | null {
  if (end.outcome !== "LOST") return null;
  const node = job.node_id ?? "its node";
  if (job.on_node_lost === "wait") {
    return `on_node_lost is "wait": it stays LOST until ${node} returns with it, ` +
      `or "gpuctl job retry" starts the next attempt`;
  }
  if (end.lease && end.lease.until === null) {
    return `not requeued: ${end.lease.why}; once sure it stopped, "gpuctl job retry" ` +
      `starts the next attempt`;
  }
  return null;
}

/**
 * The failure card of the attempt that is ending, from what is stored by now (its run's
 * status, end event and log tail): the same loading and diagnosis as `GET
 * /api/runs/{id}/failure`, so the retry decision follows the card.
 */
function diagnoseAttempt(ctx: Context, job: JobState, end: AttemptEnd, failureClass: FailureClass) {
  if (job.run_id) return diagnoseFailure(loadFailureInput(ctx, getRun(ctx, job.run_id)));
  return diagnoseFailure({
    status: end.outcome,
    exit_code: end.exit_code ?? null,
    signal: end.signal ?? null,
    failure_class: failureClass,
    events: [],
    log_tail: [],
  });
}

/**
 * Ends the current attempt and, for a failure whose diagnosed cause allows it, requeues the
 * job as the next attempt (a new run at the next dispatch). Returns whether it was requeued.
 */
export function endAttempt(ctx: Context, job: JobState, end: AttemptEnd): boolean {
  const iso = end.at.toISOString();
  const cancelled = end.outcome === "CANCELLED" ||
    (job.cancel_requested && end.outcome !== "SUCCEEDED");
  const outcome = cancelled ? "CANCELLED" : end.outcome;
  // A requested cancel keeps why it was asked for (`stopped by LOSS_NAN at step 1234: …`);
  // the agent's own words (`killed by SIGTERM`) follow.
  const reason = cancelled && job.cancel_requested && job.reason
    ? `${job.reason} (${end.reason})`
    : end.reason;
  const failureClass = cancelled ? "CANCELLED" : end.failure_class;
  if (job.run_id) {
    runsDb.updateRun(ctx.db, job.run_id, { status: outcome, finished_at: iso }, iso);
  }
  const eventType = {
    SUCCEEDED: "RUN_SUCCEEDED",
    FAILED: "RUN_FAILED",
    CANCELLED: "RUN_CANCELLED",
    LOST: "RUN_LOST",
  }[outcome];
  emitEvent(ctx, {
    type: eventType,
    severity: outcome === "FAILED" || outcome === "LOST" ? "warning" : "info",
    job_id: job.id,
    run_id: job.run_id,
    node_id: job.node_id,
    message:
      `Run of job "${job.name}" (${job.id}) attempt ${job.attempt} ended ${outcome}: ${reason}`,
    data: {
      attempt: job.attempt,
      failure_class: failureClass,
      exit_code: end.exit_code ?? null,
      signal: end.signal ?? null,
    },
  });
  if (failureClass === "OOM") {
    emitEvent(ctx, {
      type: "OOM",
      severity: "critical",
      job_id: job.id,
      run_id: job.run_id,
      node_id: job.node_id,
      message: `Job "${job.name}" (${job.id}) ran out of memory: ${reason}`,
      data: { attempt: job.attempt },
    });
  }
  const base = {
    failure_class: outcome === "SUCCEEDED" ? null : failureClass,
    exit_code: end.exit_code ?? null,
    signal: end.signal ?? null,
    reason,
  };
  const kept = cancelled ? null : keptLost(job, end);
  const decision = outcome === "SUCCEEDED" || outcome === "CANCELLED" || !failureClass
    ? { requeue: false, reason: "" }
    : kept !== null
    ? { requeue: false, reason: kept }
    : retryDecision(
      { attempt: job.attempt, max_attempts: job.max_attempts, infra_attempts: job.infra_attempts },
      failureClass,
      diagnoseAttempt(ctx, job, end, failureClass),
    );
  if (decision.requeue) {
    const infra = isInfrastructureFailure(failureClass!);
    // A lost attempt's successor waits for the node's lease to expire, unless it returns.
    const until = end.lease?.until && end.lease.until > end.at ? end.lease.until : null;
    const held = until ? `; next attempt at ${clockTime(until)} unless ${job.node_id} returns` : "";
    jobsDb.updateJob(ctx.db, job.id, {
      ...base,
      status: "QUEUED",
      attempt: job.attempt + 1,
      infra_attempts: job.infra_attempts + (infra ? 1 : 0),
      node_id: null,
      gpu_indices: [],
      run_id: null,
      started_at: null,
      finished_at: null,
      not_before: until?.toISOString() ?? null,
      reason: outcome === "LOST"
        ? `${end.reason}${held}`
        : `Attempt ${job.attempt} ended ${outcome} (${failureClass}): ${decision.reason}`,
    }, iso);
    emitEvent(ctx, {
      type: "JOB_RETRIED",
      severity: "info",
      job_id: job.id,
      message: `Job "${job.name}" (${job.id}) requeued as attempt ${
        job.attempt + 1
      }: ${decision.reason}${held}`,
      data: {
        attempt: job.attempt + 1,
        failure_class: failureClass,
        automatic: true,
        not_before: until?.toISOString() ?? null,
      },
    });
  } else {
    jobsDb.updateJob(ctx.db, job.id, {
      ...base,
      status: outcome,
      finished_at: iso,
      reason: decision.reason ? `${reason}; ${decision.reason}` : reason,
    }, iso);
    if (job.kind === "EVALUATE" && outcome !== "SUCCEEDED") {
      failEvaluationsOfJob(ctx, job.id, reason);
    }
  }
  changed(ctx, job.id, "ended");
  return decision.requeue;
}

/**
 * An agent came back still running an attempt that was marked LOST with its node and not
 * yet placed elsewhere: the job gets that attempt back instead of starting a new one. The
 * job is either requeued as the next attempt (waiting for its turn or the lease) or kept
 * LOST (`on_node_lost: "wait"`, or a node without a lease).
 */
export function reattachLostAttempt(
  ctx: Context,
  job: JobState,
  attempt: number,
  nodeId: string,
  at: Date,
): boolean {
  const requeued = job.status === "QUEUED" && job.attempt === attempt + 1;
  const kept = job.status === "LOST" && job.attempt === attempt;
  if (!requeued && !kept) return false;
  const run = runsDb.getRunOfAttempt(ctx.db, job.id, attempt);
  if (!run || run.status !== "LOST" || run.node_id !== nodeId) return false;
  const iso = at.toISOString();
  jobsDb.updateJob(
    ctx.db,
    job.id,
    {
      status: "RUNNING",
      attempt,
      infra_attempts: requeued ? Math.max(0, job.infra_attempts - 1) : job.infra_attempts,
      failure_class: null,
      node_id: nodeId,
      gpu_indices: run.gpu_indices,
      run_id: run.id,
      finished_at: null,
      not_before: null,
      reason: `Reattached: ${nodeId} came back still running attempt ${attempt}`,
    },
    iso,
    [job.status],
  );
  runsDb.updateRun(ctx.db, run.id, { status: "RUNNING", finished_at: null }, iso);
  emitEvent(ctx, {
    type: "RUN_STARTED",
    severity: "info",
    job_id: job.id,
    run_id: run.id,
    node_id: nodeId,
    message: `Job "${job.name}" (${job.id}) attempt ${attempt} reattached: ${nodeId} still runs it`,
    data: { attempt, reattached: true },
  });
  changed(ctx, job.id, "reattached");
  return true;
}
