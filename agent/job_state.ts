/** `job_state` frames: how an attempt's start and end are told to the server (pure). */
import type { AttemptRef, NewDataFrame } from "./frames.ts";
import { clip } from "./frames.ts";
import type { ExitInfo, Placement, QueuedInfo } from "./runner/types.ts";

/** Limits of the protocol's `job_state` fields. */
const MAX_REASON = 2000;
const MAX_TAIL_LINES = 200;
const MAX_TAIL_LINE = 4096;

type JobStateName = "PENDING" | "RUNNING" | "EXITED" | "DISPATCH_FAILED" | "CANCELLED" | "GONE";

/**
 * `RUNNING`, with the job's main pid; for a Slurm job, its Slurm job id and the host and GPU
 * indices Slurm gave it.
 */
export function runningFrame(
  ref: AttemptRef,
  pid: number | null,
  nowMs: number,
  placement: Placement | null = null,
): NewDataFrame {
  return {
    type: "job_state",
    stream: "data",
    ...refOf(ref),
    state: "RUNNING",
    ts: nowMs / 1000,
    pid,
    ...(placement
      ? {
        slurm_job_id: placement.slurm_job_id,
        ...(placement.node_name ? { node_name: clip(placement.node_name, 200) } : {}),
        ...(placement.gpu_indices ? { gpu_indices: placement.gpu_indices.slice(0, 64) } : {}),
      }
      : {}),
  };
}

/** `PENDING`: the attempt waits in Slurm's queue, and why. */
export function pendingFrame(ref: AttemptRef, info: QueuedInfo, nowMs: number): NewDataFrame {
  return {
    type: "job_state",
    stream: "data",
    ...refOf(ref),
    state: "PENDING",
    ts: nowMs / 1000,
    slurm_job_id: info.slurm_job_id,
    reason: clip(info.reason, MAX_REASON),
  };
}

/**
 * The state an ended attempt reports: DISPATCH_FAILED and CANCELLED as the runner classed
 * the exit; GONE when the process vanished while no agent watched it and nothing says how it
 * ended; EXITED otherwise (the server reads success from exit code and failure class).
 */
export function endStateOf(exit: ExitInfo): JobStateName {
  if (exit.failure_class === "DISPATCH_FAILED") return "DISPATCH_FAILED";
  if (exit.failure_class === "CANCELLED") return "CANCELLED";
  if (exit.failure_class === "AGENT_RESTART" && exit.exit_code === null && exit.signal === null) {
    return "GONE";
  }
  return "EXITED";
}

/** The frame that ends an attempt. */
export function endFrame(ref: AttemptRef, exit: ExitInfo, nowMs: number): NewDataFrame {
  return {
    type: "job_state",
    stream: "data",
    ...refOf(ref),
    state: endStateOf(exit),
    ts: nowMs / 1000,
    exit_code: exit.exit_code,
    signal: exit.signal === null ? null : clip(exit.signal, 20),
    failure_class: exit.failure_class,
    reason: clip(exit.reason, MAX_REASON),
    log_tail: exit.log_tail.slice(-MAX_TAIL_LINES).map((line) => clip(line, MAX_TAIL_LINE)),
  };
}

/** An end the runner could not report (it threw, or the agent lost the handle). */
export function lostExit(reason: string): ExitInfo {
  return { exit_code: null, signal: null, failure_class: "AGENT_RESTART", reason, log_tail: [] };
}

function refOf(ref: AttemptRef): AttemptRef {
  return { job_id: ref.job_id, attempt: ref.attempt, run_id: ref.run_id };
}
