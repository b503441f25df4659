/**
 * Failure diagnosis: why a run failed, how sure we are, what to change, and whether a retry
 * with the same configuration can help. Pure functions over the run's exit status, events and
 * log tail.
 *
 * @module
 */

export {
  /** Explains why a run failed from its exit status, events and log tail. */
  diagnoseFailure,
} from "./diagnose_failure.ts";
export {
  /** Every known cause, most specific first. */
  CATALOGUE,
  /** Looks up a catalogue entry by a diagnosis's `cause_id`. */
  causeById,
  /** The ids of the generic entries (traceback, non-zero exit) used when nothing else fits. */
  FALLBACK_CAUSE_IDS,
} from "./catalogue.ts";
export {
  /** For catalogue extensions: the first (or last) log line matching any pattern. */
  findLine,
  /** For catalogue extensions: log evidence quoting a line, with its seq as `line_no`. */
  logEvidence,
} from "./cause.ts";
export type { CauseEntry, CauseMatch, LineHit, RetryVerdict } from "./cause.ts";
export type { FailureFacts, LogLine } from "./facts.ts";
export type {
  Diagnosis,
  Evidence,
  EvidenceKind,
  FailureEventInput,
  FailureInput,
  LogTailLine,
} from "./failure_types.ts";
