/**
 * Whether a failed attempt is requeued (DESIGN "Scheduling", Retry). A manual
 * `gpuctl job retry` always requeues and does not ask this policy.
 *
 * @module
 */

/** Attempts a job gets when its submission does not say (DESIGN "Data model"). */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** Infrastructure failures (node lost, agent restart) a job survives before it is given up. */
export const DEFAULT_MAX_INFRA_ATTEMPTS = 5;

/** Why an attempt ended, as in the data model. */
export type FailureClass =
  | "OOM"
  | "EXIT_CODE"
  | "DISPATCH_FAILED"
  | "NODE_LOST"
  | "AGENT_RESTART"
  | "SIGNAL"
  | "CANCELLED";

/** A job's attempt counters as stored, before the failure being decided is counted. */
export interface RetryState {
  /** 1-based number of the attempt that just ended; every run counts, infrastructure ones too. */
  attempt: number;
  /** Attempts that may fail other than by infrastructure. @default 3 ({@linkcode DEFAULT_MAX_ATTEMPTS}) */
  max_attempts?: number;
  /** Earlier attempts that ended in an infrastructure failure, not counting this one. */
  infra_attempts: number;
  /** Infrastructure failures allowed. @default 5 ({@linkcode DEFAULT_MAX_INFRA_ATTEMPTS}) */
  max_infra_attempts?: number;
}

/** Requeue or not, with the reason in words for a person. */
export interface RetryDecision {
  requeue: boolean;
  reason: string;
}

/** True for failures of the platform rather than the job: they do not use up max_attempts. */
export function isInfrastructureFailure(failureClass: FailureClass): boolean {
  return failureClass === "NODE_LOST" || failureClass === "AGENT_RESTART";
}

/**
 * Decides whether the attempt that just failed is requeued.
 *
 * Never for OOM, EXIT_CODE and DISPATCH_FAILED (the same command would fail the same way) or
 * CANCELLED. NODE_LOST and AGENT_RESTART are requeued while fewer than `max_infra_attempts`
 * infrastructure failures have happened, this one included, and do not use up
 * `max_attempts`. SIGNAL is requeued while the attempts that were not infrastructure
 * failures, this one included, are fewer than `max_attempts`. On requeue the caller sets
 * `attempt + 1`, and `infra_attempts + 1` when {@linkcode isInfrastructureFailure}.
 */
export function retryDecision(job: RetryState, failureClass: FailureClass): RetryDecision {
  const maxAttempts = job.max_attempts ?? DEFAULT_MAX_ATTEMPTS;
  const maxInfra = job.max_infra_attempts ?? DEFAULT_MAX_INFRA_ATTEMPTS;
  const after = `after "${failureClass}"`;

  switch (failureClass) {
    case "OOM":
    case "EXIT_CODE":
    case "DISPATCH_FAILED":
      return {
        requeue: false,
        reason: `Not requeued ${after}: the same command would fail the same way; ` +
          `fix the cause, then run "gpuctl job retry"`,
      };
    case "CANCELLED":
      return { requeue: false, reason: `Not requeued ${after}: the job was cancelled` };
    case "NODE_LOST":
    case "AGENT_RESTART": {
      const infra = job.infra_attempts + 1;
      return infra < maxInfra
        ? {
          requeue: true,
          reason: `Requeued ${after}: infrastructure failure ${infra} of ${maxInfra}, ` +
            `not counted against max_attempts`,
        }
        : {
          requeue: false,
          reason: `Not requeued ${after}: infrastructure failure ${infra} of ${maxInfra}`,
        };
    }
    case "SIGNAL": {
      const used = job.attempt - job.infra_attempts;
      return used < maxAttempts
        ? { requeue: true, reason: `Requeued ${after}: attempt ${used} of ${maxAttempts} used` }
        : {
          requeue: false,
          reason: `Not requeued ${after}: attempt ${used} of ${maxAttempts} used, none left`,
        };
    }
  }
}
