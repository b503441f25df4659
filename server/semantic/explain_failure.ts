/**
 * `explainFailure`: why a FAILED or LOST run failed, with what to do next and the last good
 * checkpoint (saved before the loss went NaN, its own, present and complete).
 */
import type { Checkpoint, FailureExplanation, NextAction } from "../../protocol/objects.ts";
import type { RunStatus } from "../../protocol/vocabulary.ts";
import { diagnoseFailure, type FailureInput } from "../failure/mod.ts";
import { act } from "./_format.ts";
import { DEFAULT_SUITE } from "./compare_checkpoints.ts";

/** Run statuses a failure can be explained for. */
export const FAILED_STATUSES: ReadonlySet<RunStatus> = new Set(["FAILED", "LOST"]);

/** Below this confidence the log is read before anything is retried. */
export const LOW_CONFIDENCE = 0.5;

/** Everything `explainFailure` looks at, loaded by the caller. */
export interface ExplainFailureInput {
  run: { id: string; name: string; status: RunStatus; job_id: string | null; attempt: number };
  /** The job of the run, as it stands now (it may have moved on to a later attempt). */
  job: { id: string; status: string; attempt: number } | null;
  /** Exit code, signal, failure class, events and log tail of the failed attempt. */
  failure: FailureInput;
  /** The run's checkpoints, by step. */
  checkpoints: Checkpoint[];
  /** A suite already used on the run's checkpoints, for an evaluation suggestion. */
  suite_hint: string | null;
}

/**
 * Why a run failed (`diagnoseFailure`: likely cause, confidence, evidence with log line
 * numbers, fixes, retry advice) and what to do next: fix then retry, retry at once when the
 * cause was outside the code, evaluate the last good checkpoint, read the log.
 */
export function explainFailure(input: ExplainFailureInput): FailureExplanation {
  const d = diagnoseFailure(input.failure);
  const retry = d.retry;
  const last = lastGoodCheckpoint(input);
  const requeued = input.job !== null && input.job.attempt > input.run.attempt &&
    ["QUEUED", "DISPATCHED", "RUNNING"].includes(input.job.status);
  const parts = [
    `Run "${input.run.name}" (${input.run.id}) ${input.run.status}: ${d.likely_cause} ` +
    `(confidence ${d.confidence}).`,
    d.retry_advice,
  ];
  if (requeued) {
    parts.push(`Its job was already requeued as attempt ${input.job!.attempt}.`);
  }
  if (d.suggested_fixes.length) parts.push(`First fix to try: ${d.suggested_fixes[0]}.`);
  return {
    run_id: input.run.id,
    job_id: input.run.job_id,
    status: input.run.status,
    likely_cause: d.likely_cause,
    confidence: d.confidence,
    cause_id: d.cause_id,
    evidence: d.evidence,
    suggested_fixes: d.suggested_fixes,
    retry_advice: d.retry_advice,
    retry,
    last_checkpoint: last ? { checkpoint_id: last.id, step: last.step, path: last.path } : null,
    summary: parts.join(" "),
    next_actions: nextActions(input, retry, d.confidence, d.suggested_fixes, last, requeued),
  };
}

/**
 * The newest checkpoint written before the loss first went NaN (a LOSS_NAN event's step), or
 * the newest one when there was no such event; never one whose file another run overwrote,
 * that is gone or that is not complete.
 */
function lastGoodCheckpoint(input: ExplainFailureInput): Checkpoint | null {
  const nanSteps = input.failure.events
    .filter((e) => e.type === "LOSS_NAN")
    .map((e) => (e.data as { step?: unknown } | undefined)?.step)
    .filter((s): s is number => typeof s === "number");
  const limit = nanSteps.length ? Math.min(...nanSteps) : Infinity;
  const usable = input.checkpoints.filter((c) =>
    c.state === "valid" && (c.step === null || c.step < limit)
  );
  return usable.filter((c) => c.step !== null).at(-1) ?? usable.at(-1) ?? null;
}

function nextActions(
  input: ExplainFailureInput,
  retry: string,
  confidence: number,
  fixes: string[],
  last: Checkpoint | null,
  requeued: boolean,
): NextAction[] {
  const out: NextAction[] = [];
  const logs = act(
    "get_logs",
    { run_id: input.run.id },
    confidence < LOW_CONFIDENCE
      ? "The cause is uncertain: read the log before changing anything"
      : "Read the log around the evidence lines",
  );
  if (confidence < LOW_CONFIDENCE) out.push(logs);
  const jobId = input.run.job_id;
  if (jobId && !requeued) {
    if (retry === "fails_again") {
      out.push(act(
        "retry_job",
        { job_id: jobId },
        "Only after a fix" + (fixes[0] ? ` (e.g. ${fixes[0]})` : "") +
          ": the same configuration fails the same way",
      ));
    } else if (retry === "may_help") {
      out.push(act(
        "retry_job",
        { job_id: jobId },
        "The failure came from outside the training code; a retry may succeed as it is",
      ));
    }
  }
  if (last) {
    out.push(act(
      "evaluate_checkpoint",
      { checkpoint_id: last.id, suite: input.suite_hint ?? DEFAULT_SUITE },
      `The last checkpoint before the failure (step ${last.step ?? "?"}) may be usable as it is`,
    ));
  }
  if (confidence >= LOW_CONFIDENCE) out.push(logs);
  return out;
}
