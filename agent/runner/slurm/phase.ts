// Where a Slurm job is, and how it ended, decided from plain facts (pure). The states are
// Slurm's `JOB_STATE_CODES` (squeue(1)); the mapping to gpuctl's failure classes is the
// table in phase_test.ts.

import { classifyExit } from "../classify_exit.ts";
import { signalName } from "../signals.ts";
import type { ExitVerdict } from "../classify_exit.ts";
import { parseExitCode } from "./parse.ts";

/** Slurm has not started it: the reason is Slurm's (`Resources`, `Priority` …). */
export interface PendingPhase {
  phase: "pending";
  reason: string;
}
/** Its processes run (or are being stopped: COMPLETING). */
export interface RunningPhase {
  phase: "running";
  /** The host Slurm runs it on, from `NodeList`. */
  node: string | null;
}
/** Nothing of it runs any more. */
export interface EndedPhase {
  phase: "ended";
  state: string;
  reason: string;
  exit_code: number | null;
  signal: string | null;
}
export type SlurmPhase = PendingPhase | RunningPhase | EndedPhase;

const PENDING_STATES = new Set([
  "PENDING",
  "CONFIGURING",
  "REQUEUED",
  "REQUEUE_FED",
  "REQUEUE_HOLD",
  "RESV_DEL_HOLD",
  "SPECIAL_EXIT",
]);
const RUNNING_STATES = new Set([
  "RUNNING",
  "COMPLETING",
  "SUSPENDED",
  "STOPPED",
  "SIGNALING",
  "STAGE_OUT",
  "RESIZING",
]);

/**
 * The phase of a job from its `JobState`, `Reason`, `NodeList` and `ExitCode` (scontrol or
 * sacct field names; sacct's `State` may read `CANCELLED by 1000`).
 */
export function slurmPhase(record: Record<string, string>): SlurmPhase | null {
  const raw = (record.JobState ?? record.State ?? "").trim();
  const state = raw.split(/\s+/)[0].replace(/\+$/, "");
  if (state === "") return null;
  if (PENDING_STATES.has(state)) {
    return { phase: "pending", reason: pendingReason(record.Reason) };
  }
  if (RUNNING_STATES.has(state)) {
    const node = (record.NodeList ?? "").trim();
    return { phase: "running", node: node === "" || node === "(null)" ? null : node };
  }
  const exit = parseExitCode(record.ExitCode);
  return {
    phase: "ended",
    state,
    reason: raw,
    exit_code: exit && exit.signal === 0 ? exit.code : null,
    signal: exit && exit.signal !== 0 ? signalName(exit.signal) : null,
  };
}

/** Slurm's pending reason for people: `None` (not looked at yet) reads as waiting. */
export function pendingReason(reason: string | undefined): string {
  const r = (reason ?? "").trim();
  return r === "" || r === "None" || r === "(null)"
    ? "Slurm: pending (not yet scheduled)"
    : `Slurm: pending (${r})`;
}

/** What is known when a Slurm job has ended. */
export interface SlurmEndFacts {
  /** Slurm's final state (`COMPLETED`, `FAILED`, `TIMEOUT` …); null when Slurm no longer knows the job. */
  state: string | null;
  /** Slurm's State text, which may say who cancelled it (`CANCELLED by 1000`). */
  state_text: string;
  /** Code and signal: the batch script's own record when it wrote one, else Slurm's ExitCode. */
  exit_code: number | null;
  signal: string | null;
  /** The agent asked to cancel it. */
  cancelled: boolean;
  /** Who cancelled it, when Slurm says and it was not the agent. */
  cancelled_by: string | null;
  log_tail: string[];
  /** The job's time limit as Slurm shows it (`00:10:00`), for the TIMEOUT reason. */
  time_limit: string | null;
  /** The host it ran on, for NODE_FAIL. */
  node: string | null;
}

/** Classifies a Slurm job's end; see the table in `phase_test.ts`. */
export function classifySlurmEnd(facts: SlurmEndFacts): ExitVerdict {
  const generic = () =>
    classifyExit({
      exit_code: facts.exit_code,
      signal: facts.signal,
      cancelled: facts.cancelled,
      log_tail: facts.log_tail,
      oomKilled: null,
      runner: "process",
    });
  if (facts.cancelled) return generic();
  const on = facts.node ? ` on ${facts.node}` : "";
  switch (facts.state) {
    case "OUT_OF_MEMORY":
      return {
        failure_class: "OOM",
        reason: `Slurm stopped it for using more memory than it was given${on} (OUT_OF_MEMORY)`,
      };
    case "NODE_FAIL":
      return { failure_class: "NODE_LOST", reason: `its Slurm node${on} failed (NODE_FAIL)` };
    case "BOOT_FAIL":
      return {
        failure_class: "NODE_LOST",
        reason: `its Slurm node${on} failed to boot (BOOT_FAIL)`,
      };
    case "PREEMPTED":
      return {
        failure_class: "NODE_LOST",
        reason: `preempted by Slurm${on} for a higher-priority job (PREEMPTED)`,
      };
    case "TIMEOUT": {
      const limit = facts.time_limit ? ` of ${facts.time_limit}` : "";
      return {
        failure_class: "SIGNAL",
        reason: `reached its Slurm time limit${limit} and was stopped (TIMEOUT)`,
      };
    }
    case "DEADLINE":
      return { failure_class: "SIGNAL", reason: "reached its Slurm deadline (DEADLINE)" };
    case "CANCELLED": {
      const by = facts.cancelled_by ? ` by ${facts.cancelled_by}` : "";
      return { failure_class: "CANCELLED", reason: `cancelled in Slurm${by}, not by gpuctl` };
    }
  }
  const verdict = generic();
  if (facts.state === null && verdict.failure_class === "AGENT_RESTART") {
    return {
      failure_class: "AGENT_RESTART",
      reason: "Slurm no longer knows the job and it left no exit status (no accounting?)",
    };
  }
  return verdict;
}

/** `CANCELLED by 1000` → `1000`; null when it does not say. */
export function cancelledByUid(stateText: string): string | null {
  const match = /^CANCELLED by (\S+)/.exec(stateText.trim());
  return match ? match[1] : null;
}
