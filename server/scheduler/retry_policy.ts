/**
 * Whether a failed attempt is requeued (DESIGN "Scheduling", Retry): a pure function of the
 * diagnosed cause, so that the failure card's retry advice and what the scheduler does come
 * from the same answer ({@linkcode automaticRetry}). A manual `gpuctl job retry` always
 * requeues and does not ask this policy.
 *
 * @module
 */
import type { FailureClass } from "../../protocol/vocabulary.ts";
import { automaticRetry } from "../failure/retry.ts";
import type { Diagnosis } from "../failure/failure_types.ts";

export type { FailureClass };

/** Attempts a job gets when its submission does not say (DESIGN "Data model"). */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** Infrastructure failures (node lost, agent restart) a job survives before it is given up. */
export const DEFAULT_MAX_INFRA_ATTEMPTS = 5;

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

/** The part of a failure's diagnosis the decision reads. */
export type DiagnosedCause = Pick<Diagnosis, "cause_id" | "retry" | "retry_advice">;

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
 * Decides whether the attempt that just failed is requeued, from its diagnosed cause.
 *
 * A cause whose verdict is not "may_help" (a deterministic failure, a cancel, a cause that
 * cannot be told) is never requeued. A transient one is: NODE_LOST and AGENT_RESTART while
 * fewer than `max_infra_attempts` infrastructure failures have happened, this one included,
 * without using up `max_attempts`; any other while the attempts that were not infrastructure
 * failures, this one included, are fewer than `max_attempts`. The reason quotes the card's
 * retry advice. On requeue the caller sets `attempt + 1`, and `infra_attempts + 1` when
 * {@linkcode isInfrastructureFailure}.
 */
export function retryDecision(
  job: RetryState,
  failureClass: FailureClass,
  cause: DiagnosedCause,
): RetryDecision {
  const maxAttempts = job.max_attempts ?? DEFAULT_MAX_ATTEMPTS;
  const maxInfra = job.max_infra_attempts ?? DEFAULT_MAX_INFRA_ATTEMPTS;
  const after = `after ${cause.cause_id}`;
  const card = cause.retry_advice;
  if (!automaticRetry(cause.retry).requeue) {
    return { requeue: false, reason: `Not requeued ${after}: ${card}` };
  }
  if (isInfrastructureFailure(failureClass)) {
    const infra = job.infra_attempts + 1;
    return infra < maxInfra
      ? {
        requeue: true,
        reason: `Requeued ${after} (infrastructure failure ${infra} of ${maxInfra}, ` +
          `not counted against max_attempts): ${card}`,
      }
      : {
        requeue: false,
        reason: `Not requeued ${after} (infrastructure failure ${infra} of ${maxInfra}): ${card}`,
      };
  }
  const used = job.attempt - job.infra_attempts;
  return used < maxAttempts
    ? {
      requeue: true,
      reason: `Requeued ${after} (attempt ${used} of ${maxAttempts} used): ${card}`,
    }
    : {
      requeue: false,
      reason: `Not requeued ${after} (attempt ${used} of ${maxAttempts} used, none left): ${card}`,
    };
}
