/**
 * Scheduling decisions as pure functions: placement of queued jobs on GPU slots, dependency
 * resolution and the retry policy. The caller loads the facts and applies the decisions.
 *
 * @module
 */

/** Decides one scheduling pass: assignments, the head job's reservation, waiting reasons. */
export { placeJobs } from "./place_jobs.ts";
/** Queue order: priority desc, then submission order. */
export { compareJobs } from "./place_jobs.ts";
/** CPU-only jobs a node runs at once unless its config says otherwise. */
export { DEFAULT_CPU_SLOTS } from "./place_jobs.ts";
/** Placement inputs and outputs. */
export type {
  Assignment,
  GpuSlot,
  NodeCapacity,
  Placement,
  QueuedJob,
  Reservation,
  WaitingJob,
} from "./place_jobs.ts";

/** Splits queued jobs into ready, blocked and failed by the jobs they run after. */
export { resolveDependencies } from "./dependencies.ts";
/** Dependency resolution inputs and outputs. */
export type { DependencyFailure, JobDependencies, ResolvedDependencies } from "./dependencies.ts";

/** Decides whether a failed attempt is requeued. */
export { retryDecision } from "./retry_policy.ts";
/** True for NODE_LOST and AGENT_RESTART, which do not use up max_attempts. */
export { isInfrastructureFailure } from "./retry_policy.ts";
/** Attempts a job gets when its submission does not say. */
export { DEFAULT_MAX_ATTEMPTS } from "./retry_policy.ts";
/** Infrastructure failures a job survives before it is given up. */
export { DEFAULT_MAX_INFRA_ATTEMPTS } from "./retry_policy.ts";
/** Retry policy inputs and outputs. */
export type { DiagnosedCause, FailureClass, RetryDecision, RetryState } from "./retry_policy.ts";
