/**
 * Jobs in the domain: a submission checked and stored as a QUEUED job (its parent run and
 * checkpoint resolved), jobs listed and read, cancelled, and retried as a next attempt.
 */
import type { ForkOverrides, Job, Page } from "../../protocol/objects.ts";
import type { JobListQuery, JobSubmission } from "../../protocol/rest/jobs.ts";
import {
  budgets as budgetsDb,
  checkpoints as checkpointsDb,
  jobs as jobsDb,
  runs as runsDb,
} from "../db/mod.ts";
import { ensureProjectAndExperiment } from "../projects/service.ts";
import { publicJob } from "../db/jobs.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { DEFAULT_MAX_ATTEMPTS } from "../scheduler/mod.ts";
import { failEvaluationsOfJob } from "../evaluations/record_results.ts";
import { conflict, invalidField, notFound, quoted } from "../errors.ts";
import { assertSubmissionFits } from "../budgets/service.ts";

/** The project a submission lands in when it names none. */
export const DEFAULT_PROJECT = "default";

const ACTIVE = ["QUEUED", "DISPATCHED", "RUNNING"] as const;

/** Tells the scheduler that the set of jobs changed. */
function jobsChanged(ctx: Context, jobId: string, reason: string): void {
  ctx.db.afterCommit(() => ctx.bus.publish(topics.jobs, { job_id: jobId, reason }));
}

/**
 * Stores a valid submission as a QUEUED job, creating its project and experiment on first use.
 * `submitted_by` (a token id) is the token whose budget the job counts against; a submission
 * past that budget is refused (`BudgetExceeded`) and stores nothing.
 */
export function submitJob(
  ctx: Context,
  s: JobSubmission,
  kind: Job["kind"] = "TRAIN",
  extra: {
    config?: Record<string, unknown>;
    fork_overrides?: ForkOverrides;
    submitted_by?: string | null;
  } = {},
): Job {
  const at = ctx.now().toISOString();
  const id = ctx.newId("j");
  return ctx.db.tx(() => {
    for (const dep of s.after ?? []) {
      if (!jobsDb.getJob(ctx.db, dep)) {
        throw invalidField("job submission", "after", `job ${quoted(dep)} does not exist`);
      }
    }
    const lineage = lineageOf(ctx, s);
    const project = s.project ?? DEFAULT_PROJECT;
    if (extra.submitted_by) {
      assertSubmissionFits(ctx, extra.submitted_by, { name: s.name, gpus: s.gpus, project });
    }
    ensureProjectAndExperiment(ctx, { project, experiment: s.experiment }, at);
    const shell = typeof s.command === "string" ? true : s.shell ?? false;
    jobsDb.insertJob(ctx.db, {
      id,
      name: s.name,
      kind,
      project,
      experiment: s.experiment ?? null,
      command: s.command,
      shell,
      working_dir: s.working_dir,
      env: s.env ?? {},
      secret_env: s.secret_env ?? [],
      gpus: s.gpus,
      priority: s.priority ?? 0,
      max_attempts: s.max_attempts ?? DEFAULT_MAX_ATTEMPTS,
      node: s.node ?? lineage.node,
      tensorboard_dir: s.tensorboard_dir ?? null,
      checkpoint_dir: s.checkpoint_dir ?? null,
      runner: s.runner ?? "process",
      image: s.image ?? null,
      after: s.after ?? [],
      max_steps: s.max_steps ?? null,
      grace_s: s.grace_s ?? null,
      on_node_lost: s.on_node_lost ?? "requeue",
      created_at: at,
    });
    if (s.stop_on?.length) jobsDb.setStopOn(ctx.db, id, [...new Set(s.stop_on)]);
    if (extra.config) jobsDb.setConfig(ctx.db, id, extra.config);
    if (extra.submitted_by) budgetsDb.setSubmitter(ctx.db, id, extra.submitted_by);
    if (lineage.parent_run || lineage.resume_from || extra.fork_overrides) {
      jobsDb.setLineage(ctx.db, id, {
        parent_run: lineage.parent_run,
        resume_from: lineage.resume_from,
        fork_overrides: extra.fork_overrides ?? null,
      });
    }
    emitEvent(ctx, {
      type: "JOB_QUEUED",
      severity: "info",
      job_id: id,
      message: `Job "${s.name}" (${id}) queued: ${s.gpus} GPU${s.gpus === 1 ? "" : "s"}` +
        `, priority ${s.priority ?? 0}`,
      data: { gpus: s.gpus, priority: s.priority ?? 0, project },
    });
    jobsChanged(ctx, id, "submitted");
    return publicJob(jobsDb.getJob(ctx.db, id)!);
  });
}

/**
 * A submission's parent run and starting checkpoint, checked. A checkpoint's file is local to
 * the host its run trained on, so a job that resumes from one runs there unless it names a node
 * (as an evaluation of it does).
 */
function lineageOf(ctx: Context, s: JobSubmission): {
  parent_run: string | null;
  resume_from: Job["resume_from"];
  node: string | null;
} {
  if (s.parent_run && !runsDb.getRun(ctx.db, s.parent_run)) {
    throw invalidField(
      "job submission",
      "parent_run",
      `run ${quoted(s.parent_run)} does not exist`,
    );
  }
  if (!s.resume_from) return { parent_run: s.parent_run ?? null, resume_from: null, node: null };
  const checkpoint = checkpointsDb.getCheckpoint(ctx.db, s.resume_from);
  if (!checkpoint) {
    throw invalidField(
      "job submission",
      "resume_from",
      `checkpoint ${quoted(s.resume_from)} does not exist`,
    );
  }
  if (checkpoint.overwritten) {
    throw invalidField(
      "job submission",
      "resume_from",
      `checkpoint ${quoted(s.resume_from)} of run ${quoted(checkpoint.run_id)} was overwritten ` +
        `by run ${quoted(checkpoint.overwritten_by_run ?? "?")}: pick a checkpoint of that run`,
    );
  }
  const run = runsDb.getRun(ctx.db, checkpoint.run_id);
  return {
    parent_run: s.parent_run ?? null,
    resume_from: { checkpoint_id: checkpoint.id, path: checkpoint.path },
    node: run?.node_id ?? null,
  };
}

/** `GET /api/jobs`: newest first, filtered by status, project, experiment and node. */
export function listJobs(ctx: Context, query: JobListQuery): Page<Job> {
  return jobsDb.listJobs(
    ctx.db,
    {
      status: query.status,
      project: query.project,
      experiment: query.experiment,
      node_id: query.node_id,
    },
    query.limit ?? JOB_PAGE_SIZE,
    query.cursor ? Number(query.cursor) : undefined,
  );
}

/** Jobs a list shows unless `limit` says otherwise. */
export const JOB_PAGE_SIZE = 100;

/** `GET /api/jobs/{id}`. */
export function getJob(ctx: Context, id: string): Job {
  const job = jobsDb.getJob(ctx.db, id);
  if (!job) throw notFound("Job", id);
  return publicJob(job);
}

/**
 * Cancels a job. A queued job ends CANCELLED at once; a dispatched or running one is
 * marked for cancellation and the agent that runs it is told (it reports the end). `reason`
 * replaces the plain "Cancel requested by …" (a `stop_on` anomaly names itself).
 */
export function cancelJob(ctx: Context, id: string, by: string, reason?: string): Job {
  const at = ctx.now().toISOString();
  return ctx.db.tx(() => {
    const job = jobsDb.getJob(ctx.db, id);
    if (!job) throw notFound("Job", id);
    if (!(ACTIVE as readonly string[]).includes(job.status)) {
      throw conflict(`Cannot cancel job "${id}": it already ended ${job.status}`);
    }
    if (job.status === "QUEUED") {
      jobsDb.updateJob(ctx.db, id, {
        status: "CANCELLED",
        failure_class: "CANCELLED",
        reason: reason ?? `Cancelled by ${by} while queued`,
        finished_at: at,
      }, at);
      emitEvent(ctx, {
        type: "RUN_CANCELLED",
        severity: "info",
        job_id: id,
        run_id: job.run_id,
        message: `Job "${job.name}" (${id}) cancelled by ${by} before it started`,
        data: { by },
      });
      if (job.kind === "EVALUATE") failEvaluationsOfJob(ctx, id, `cancelled by ${by} while queued`);
    } else {
      jobsDb.updateJob(
        ctx.db,
        id,
        { cancel_requested: true, reason: reason ?? `Cancel requested by ${by}` },
        at,
      );
    }
    jobsChanged(ctx, id, "cancel");
    return publicJob(jobsDb.getJob(ctx.db, id)!);
  });
}

/** Requeues an ended job as its next attempt, whatever its failure class. */
export function retryJob(ctx: Context, id: string, by: string): Job {
  const at = ctx.now().toISOString();
  return ctx.db.tx(() => {
    const job = jobsDb.getJob(ctx.db, id);
    if (!job) throw notFound("Job", id);
    if (job.status === "QUEUED" && job.not_before) {
      // A person lifts the wait for a silent node's lease: they vouch that the old copy stopped.
      jobsDb.updateJob(
        ctx.db,
        id,
        {
          not_before: null,
          reason: `Retried by ${by}: starts without waiting for the lease of its silent node`,
        },
        at,
        ["QUEUED"],
      );
      emitEvent(ctx, {
        type: "JOB_RETRIED",
        severity: "info",
        job_id: id,
        message: `Job "${job.name}" (${id}) attempt ${job.attempt} released by ${by}: ` +
          `it no longer waits until ${job.not_before} for its silent node`,
        data: { attempt: job.attempt, previous_status: job.status, by, released: true },
      });
      jobsChanged(ctx, id, "retry");
      return publicJob(jobsDb.getJob(ctx.db, id)!);
    }
    if ((ACTIVE as readonly string[]).includes(job.status)) {
      throw conflict(`Cannot retry job "${id}": it is still ${job.status}; cancel it first`);
    }
    // Queued again, it counts against its submitter's budget as a new submission would.
    if (job.submitted_by) {
      assertSubmissionFits(ctx, job.submitted_by, job, `retry job ${quoted(id)}`);
    }
    jobsDb.updateJob(ctx.db, id, {
      status: "QUEUED",
      attempt: job.attempt + 1,
      failure_class: null,
      reason: `Retried by ${by}`,
      exit_code: null,
      signal: null,
      node_id: null,
      gpu_indices: [],
      cancel_requested: false,
      started_at: null,
      finished_at: null,
      not_before: null,
    }, at);
    emitEvent(ctx, {
      type: "JOB_RETRIED",
      severity: "info",
      job_id: id,
      message: `Job "${job.name}" (${id}) requeued by ${by} as attempt ${job.attempt + 1}`,
      data: { attempt: job.attempt + 1, previous_status: job.status, by },
    });
    jobsChanged(ctx, id, "retry");
    return publicJob(jobsDb.getJob(ctx.db, id)!);
  });
}
