/**
 * Applies one data frame from an agent: exactly once per `(node, stream, seq)`, in the same
 * transaction as the cursor, and only for the attempt the server currently gives that node
 * (attempt numbers fence stale copies of a job).
 */
import type { DataFrame, StreamName } from "../../protocol/agent.ts";
import type { SdkLogBatch } from "../../protocol/rest/sdk.ts";
import { cursors, jobs as jobsDb, runs as runsDb } from "../db/mod.ts";
import { topics } from "../bus/bus.ts";
import type { JobState } from "../db/jobs.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { endAttempt, markPending, markRunning } from "../jobs/transitions.ts";
import { ingestBatch } from "../runs/service.ts";
import { maskSecretText, secretValues } from "../../protocol/secret_env.ts";

/**
 * How far ahead of a node's cursor a frame's seq may be. An agent's seqs rise by one per
 * frame; gaps come only from `sys` frames its full spool dropped. Without a bound, one frame
 * with seq 2^53−1 would move the cursor past every frame the real agent will ever send.
 */
export const MAX_SEQ_STEP = 10_000_000;

/** Events a node may raise per second, on average, and at once. */
export const NODE_EVENTS_PER_S = 20;
export const NODE_EVENT_BURST = 200;

interface EventBucket {
  tokens: number;
  at: number;
  dropped: number;
  loggedAt: number;
}
const eventBuckets = new WeakMap<Context, Map<string, EventBucket>>();

/** Takes one of the node's event tokens (false: over its budget, the event is dropped). */
function takeEventToken(ctx: Context, nodeId: string): boolean {
  let buckets = eventBuckets.get(ctx);
  if (!buckets) eventBuckets.set(ctx, buckets = new Map());
  const now = ctx.now().getTime();
  let b = buckets.get(nodeId);
  if (!b) buckets.set(nodeId, b = { tokens: NODE_EVENT_BURST, at: now, dropped: 0, loggedAt: 0 });
  b.tokens = Math.min(NODE_EVENT_BURST, b.tokens + (now - b.at) / 1000 * NODE_EVENTS_PER_S);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens--;
    return true;
  }
  b.dropped++;
  if (now - b.loggedAt >= 60_000) {
    ctx.log.warn("agent events over budget: not stored", {
      node: nodeId,
      dropped: b.dropped,
      budget: `${NODE_EVENTS_PER_S}/s, ${NODE_EVENT_BURST} at once`,
    });
    b.loggedAt = now;
    b.dropped = 0;
  }
  return false;
}

/** What the gateway does after a frame: ack it, and maybe refuse it or kill a stale copy. */
export interface FrameOutcome {
  /** Absent for a frame refused before it was counted: its seq is not acknowledged. */
  ack?: { stream: StreamName; seq: number };
  applied: boolean;
  refused?: string;
  kill?: { job_id: string; attempt: number; reason: string };
}

/** Applies a frame (or skips it as already applied) and advances the cursor, in one transaction. */
export function applyDataFrame(ctx: Context, nodeId: string, frame: DataFrame): FrameOutcome {
  return ctx.db.tx(() => {
    const ack = { stream: frame.stream, seq: frame.seq };
    const cursor = cursors.getCursor(ctx.db, nodeId, frame.stream);
    if (frame.seq <= cursor) return { ack, applied: false };
    if (frame.seq - cursor > MAX_SEQ_STEP) {
      return {
        applied: false,
        refused: `Refused ${frame.type} frame ${frame.stream}#${frame.seq}: seq is more than ` +
          `${MAX_SEQ_STEP} ahead of node "${nodeId}"'s cursor ${cursor}`,
      };
    }
    cursors.setCursor(ctx.db, nodeId, frame.stream, frame.seq);
    if (frame.type === "event") {
      // Past its budget a node's events are acknowledged and not stored (a flood would
      // otherwise fill the log and hold the loop); the server logs how many, once a minute.
      if (!takeEventToken(ctx, nodeId)) return { ack, applied: false };
      emitEvent(ctx, { ...frame.event, node_id: nodeId });
      return { ack, applied: true };
    }
    const job = jobsDb.getJob(ctx.db, frame.job_id);
    const stale = staleReason(job, nodeId, frame.attempt, frame.run_id);
    // A copy that is still going (running, or waiting in Slurm's queue) is stopped; one that
    // ended may let its held successor start.
    const going = frame.type === "job_state" &&
      (frame.state === "RUNNING" || frame.state === "PENDING");
    if (stale && frame.type === "job_state" && !going) {
      releaseHold(ctx, job!, nodeId, frame.attempt, frame.run_id);
    }
    if (stale && job && frame.type !== "job_state" && ownedEarlierRun(ctx, job, nodeId, frame)) {
      // What a lost attempt wrote while its node was cut off is that run's record: it is
      // stored there (the run stays ended), or it would be lost with the connection.
      applyRunData(ctx, frame.run_id, frame);
      return { ack, applied: true };
    }
    if (stale) {
      const running = going;
      return {
        ack,
        applied: false,
        refused: `Refused ${frame.type} frame ${frame.stream}#${frame.seq}: ${stale}`,
        kill: running
          ? { job_id: frame.job_id, attempt: frame.attempt, reason: `stale copy: ${stale}` }
          : undefined,
      };
    }
    applyJobFrame(ctx, job!, frame);
    return { ack, applied: true };
  });
}

function staleReason(
  job: JobState | null,
  nodeId: string,
  attempt: number,
  runId: string,
): string | null {
  if (!job) return `job does not exist`;
  if (job.attempt !== attempt) {
    return `job "${job.id}" is at attempt ${job.attempt}, the frame is for attempt ${attempt}`;
  }
  if (job.node_id !== nodeId) {
    return `job "${job.id}" attempt ${attempt} belongs to node "${
      job.node_id ?? "none"
    }", not "${nodeId}"`;
  }
  if (job.run_id !== runId) {
    return `run "${runId}" is not the run of job "${job.id}" attempt ${attempt}`;
  }
  return null;
}

/** Whether `frame` is of an earlier attempt of `job` that ran on `nodeId` as that run. */
function ownedEarlierRun(
  ctx: Context,
  job: JobState,
  nodeId: string,
  frame: { attempt: number; run_id: string },
): boolean {
  if (frame.attempt >= job.attempt) return false;
  const run = runsDb.getRunOfAttempt(ctx.db, job.id, frame.attempt);
  return run !== null && run.id === frame.run_id && run.node_id === nodeId;
}

const ACTIVE = new Set(["DISPATCHED", "RUNNING"]);

/**
 * The node of a lost attempt says it ended: its successor, held until the node's lease
 * expired, may start now.
 */
function releaseHold(
  ctx: Context,
  job: JobState,
  nodeId: string,
  attempt: number,
  runId: string,
): void {
  if (job.status !== "QUEUED" || !job.not_before || job.attempt !== attempt + 1) return;
  const run = runsDb.getRunOfAttempt(ctx.db, job.id, attempt);
  if (!run || run.id !== runId || run.node_id !== nodeId) return;
  jobsDb.updateJob(
    ctx.db,
    job.id,
    {
      not_before: null,
      reason: `${nodeId} reports attempt ${attempt} ended: the next attempt may start`,
    },
    ctx.now().toISOString(),
    ["QUEUED"],
  );
  ctx.db.afterCommit(() => ctx.bus.publish(topics.jobs, { job_id: job.id, reason: "released" }));
}

function applyJobFrame(ctx: Context, job: JobState, frame: Exclude<DataFrame, { type: "event" }>) {
  switch (frame.type) {
    case "job_state": {
      // Already ended (a replay after a restart), except an attempt kept LOST while its node
      // was silent (on_node_lost "wait"): its node is back and says how it ended.
      const going = frame.state === "RUNNING" || frame.state === "PENDING";
      if (!ACTIVE.has(job.status) && !(job.status === "LOST" && !going)) return;
      const at = new Date(frame.ts * 1000);
      if (frame.state === "PENDING") {
        markPending(ctx, job, {
          slurm_job_id: frame.slurm_job_id ?? null,
          reason: frame.reason == null ? null : maskJobText(job, frame.reason),
        }, at);
        return;
      }
      if (frame.state === "RUNNING") {
        markRunning(ctx, job, frame.pid ?? null, at, {
          slurm_job_id: frame.slurm_job_id ?? null,
          node_name: frame.node_name ?? null,
          gpu_indices: frame.gpu_indices ?? null,
        });
        return;
      }
      const tail = frame.log_tail ?? [];
      const outcome = frame.state === "CANCELLED"
        ? "CANCELLED"
        : frame.state === "EXITED" && frame.exit_code === 0 && !frame.failure_class
        ? "SUCCEEDED"
        : "FAILED";
      const failureClass = frame.failure_class ??
        (frame.state === "DISPATCH_FAILED"
          ? "DISPATCH_FAILED"
          : frame.state === "GONE"
          ? "AGENT_RESTART"
          : outcome === "FAILED"
          ? (frame.signal ? "SIGNAL" : "EXIT_CODE")
          : null);
      endAttempt(ctx, job, {
        outcome,
        failure_class: failureClass,
        exit_code: frame.exit_code ?? null,
        signal: frame.signal ?? null,
        // The agent builds it from the job's output (an OOM line, a command that failed to
        // start): masked here, before the job, its events and its failure card quote it.
        reason: frame.reason == null
          ? describeExit(frame.exit_code, frame.signal, tail)
          : maskJobText(job, frame.reason),
        at,
      });
      return;
    }
    default:
      applyRunData(ctx, job.run_id!, frame);
  }
}

/** Stores what a data frame carries (points, lines, a checkpoint, an SDK batch) in `runId`. */
function applyRunData(
  ctx: Context,
  runId: string,
  frame: Exclude<DataFrame, { type: "event" | "job_state" }>,
): void {
  switch (frame.type) {
    case "metrics":
      ingestBatch(ctx, runId, { points: frame.points });
      return;
    case "logs":
      ingestBatch(ctx, runId, { logs: frame.lines });
      return;
    case "checkpoint":
      ingestBatch(ctx, runId, { checkpoints: [frame.checkpoint] });
      return;
    case "sdk": {
      // A job's run ends with its process, not with the script's finish() call.
      const { status: _status, ...batch } = frame.batch as SdkLogBatch;
      ingestBatch(ctx, runId, batch);
      return;
    }
  }
}

/** Text from a job's output with its secret values masked (see protocol/secret_env.ts). */
function maskJobText(job: JobState, text: string): string {
  return maskSecretText(text, secretValues(job.env, job.secret_env));
}

function describeExit(
  code: number | null | undefined,
  signal: string | null | undefined,
  _tail: string[],
) {
  if (signal) return `killed by ${signal}`;
  if (code !== null && code !== undefined) return `exited with code ${code}`;
  return "ended";
}
