/** Retry advice: what retrying can be expected to do for each verdict, and what gpuctl does by itself. */
import type { RetryVerdict } from "./cause.ts";

/** What gpuctl does by itself after a failed attempt: one answer per retry verdict. */
export interface AutomaticRetry {
  /** The scheduler requeues the job (while attempts remain). */
  requeue: boolean;
  /** The last sentence of the failure card's retry advice: says what gpuctl does. */
  sentence: string;
}

const PLANS: Readonly<Record<RetryVerdict, AutomaticRetry>> = {
  may_help: {
    requeue: true,
    sentence: "gpuctl requeues the job by itself while attempts remain.",
  },
  fails_again: {
    requeue: false,
    sentence: 'gpuctl does not requeue it by itself: fix the cause, then run "gpuctl job retry".',
  },
  unknown: {
    requeue: false,
    sentence: 'gpuctl does not requeue it by itself: read the log, then run "gpuctl job retry" ' +
      "if the cause has passed.",
  },
  not_a_failure: {
    requeue: false,
    sentence: "gpuctl does not requeue it by itself.",
  },
};

/**
 * Whether a failure with this verdict is retried by itself, and the sentence that says so.
 * The failure card's retry advice ends with `sentence` and the scheduler's retry policy
 * requeues exactly when `requeue` holds, so the two cannot disagree (DESIGN "Scheduling",
 * Retry): transient causes are retried, deterministic ones and cancels are not, and a cause
 * that cannot be told is left to a person.
 */
export function automaticRetry(verdict: RetryVerdict): AutomaticRetry {
  return PLANS[verdict];
}
