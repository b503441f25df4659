/** Test inputs for the failure catalogue: a log tail from a multi-line string, a failed run's facts. */
import assert from "node:assert/strict";
import { causeById } from "./catalogue.ts";
import type { RetryVerdict } from "./cause.ts";
import { diagnoseFailure } from "./diagnose_failure.ts";
import type { Diagnosis, FailureInput, LogTailLine } from "./failure_types.ts";

/** A log tail from a multi-line string; line k (from 0) gets seq `firstSeq + k`. */
export function logTail(text: string, firstSeq = 1000): LogTailLine[] {
  const lines = text.replace(/^\n/, "").replace(/\n$/, "").split("\n");
  return lines.map((line, k) => ({ seq: firstSeq + k, text: line }));
}

/** A FAILED run's input: exit code 1 and the given log, unless overridden. */
export function failed(log: string, over: Partial<FailureInput> = {}): FailureInput {
  return {
    status: "FAILED",
    exit_code: 1,
    signal: null,
    failure_class: "EXIT_CODE",
    events: [],
    log_tail: logTail(log),
    ...over,
  };
}

/** What a test expects of a diagnosis. */
export interface Expected {
  cause: string;
  /** The seq of the log line the cause was found on (primary evidence). */
  line?: number;
  likely?: RegExp;
  retry: RetryVerdict;
  minConfidence?: number;
  fix?: RegExp;
}

/** Diagnoses `input` and checks it against `want`; returns the diagnosis for more checks. */
export function expectDiagnosis(name: string, input: FailureInput, want: Expected): Diagnosis {
  const d = diagnoseFailure(input);
  const msg = `${name}: got ${d.cause_id} (${d.confidence}) "${d.likely_cause}"`;
  assert.equal(d.cause_id, want.cause, msg);
  if (want.line !== undefined) {
    assert.equal(d.evidence[0].kind, "log", msg);
    assert.equal(d.evidence[0].line_no, want.line, msg);
  }
  if (want.likely) assert.match(d.likely_cause, want.likely, msg);
  assert.equal(causeById(d.cause_id)?.retry, want.retry, msg);
  if (want.minConfidence !== undefined) assert.ok(d.confidence >= want.minConfidence, msg);
  assert.ok(d.confidence > 0 && d.confidence <= 1, msg);
  if (want.fix) {
    assert.ok(
      d.suggested_fixes.some((f) => want.fix!.test(f)),
      `${msg}: fixes ${JSON.stringify(d.suggested_fixes)}`,
    );
  }
  return d;
}
