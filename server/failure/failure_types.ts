/** The failure card's shape: evidence, the diagnosis, its retry advice. */
import type { RetryVerdict } from "./cause.ts";

/** Where a piece of evidence comes from. */
export type EvidenceKind = "exit_code" | "signal" | "log" | "event" | "failure_class";

/** One fact behind a diagnosis; `line_no` is the log line's `seq` for log evidence. */
export interface Evidence {
  kind: EvidenceKind;
  detail: string;
  line_no?: number;
}

/** One line of a run's log as the server keeps it. */
export interface LogTailLine {
  seq: number;
  text: string;
}

/** An event recorded for the run (LOSS_NAN, OOM, …). */
export interface FailureEventInput {
  type: string;
  message: string;
  data?: unknown;
}

/** What the server knows about a finished run: the input of `diagnoseFailure()`. */
export interface FailureInput {
  /** The run's (or job's) status: "FAILED", "LOST", "CANCELLED", … */
  status: string;
  exit_code: number | null;
  /** The signal that ended the process, as the agent reported it ("SIGKILL", "KILL", "9"). */
  signal: string | null;
  /** The job's failure class: OOM, EXIT_CODE, DISPATCH_FAILED, NODE_LOST, AGENT_RESTART, … */
  failure_class: string | null;
  events: readonly FailureEventInput[];
  /** The last lines of the run's log, oldest first. */
  log_tail: readonly LogTailLine[];
  cancelled_by?: string | null;
}

/** The verdict on why a run failed, what to change and whether a retry can help. */
export interface Diagnosis {
  /** One sentence, values quoted. */
  likely_cause: string;
  /** 0..1: how specific the match is (a named error message beats an exit code). */
  confidence: number;
  /** The primary cause's evidence first, then secondary findings. */
  evidence: Evidence[];
  suggested_fixes: string[];
  /**
   * Says plainly whether retrying the same configuration must fail the same way, and ends
   * with what gpuctl does about it (`automaticRetry(retry).sentence`).
   */
  retry_advice: string;
  /** The verdict the advice words: the scheduler requeues on "may_help" only. */
  retry: RetryVerdict;
  /** The catalogue entry's id ("cuda_oom", "module_not_found", …) or "unknown". */
  cause_id: string;
}
