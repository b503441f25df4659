/**
 * `diagnoseFailure`: a failed run's facts (exit, signal, log tail, events) → the likeliest
 * cause with its evidence lines, fixes, confidence and retry verdict, the deciding line first.
 */
import type { CauseEntry, CauseMatch } from "./cause.ts";
import { excerpt, exitCodeEvidence, logEvidence, signalEvidence } from "./cause.ts";
import { CATALOGUE, FALLBACK_CAUSE_IDS } from "./catalogue.ts";
import { buildFacts, type FailureFacts } from "./facts.ts";
import type { Diagnosis, Evidence, FailureInput } from "./failure_types.ts";
import { automaticRetry } from "./retry.ts";
import { familySecondChance } from "./family_second_chance.ts";

interface Found {
  entry: CauseEntry;
  order: number;
  match: CauseMatch;
}

/**
 * Explains why a run failed: matches every catalogue entry against the exit code, signal,
 * failure class, events and log tail, and picks the most specific match. Other matches are
 * kept as secondary evidence.
 */
export function diagnoseFailure(
  input: FailureInput,
  catalogue: readonly CauseEntry[] = CATALOGUE,
): Diagnosis {
  const facts = buildFacts(input);
  const found: Found[] = [];
  catalogue.forEach((entry, order) => {
    const match = entry.match(facts);
    if (match) found.push({ entry, order, match });
  });
  found.sort((a, b) =>
    rank(facts, b) - rank(facts, a) || b.match.confidence - a.match.confidence ||
    a.order - b.order
  );
  if (found.length === 0) return unknown(facts);
  const [primary, ...others] = secondChance(facts, catalogue, found);
  const retry = primary.match.retry ?? primary.entry.retry;
  const advice = primary.match.retry_advice ?? primary.entry.retry_advice;
  return {
    likely_cause: primary.match.likely_cause,
    confidence: primary.match.confidence,
    evidence: mergeEvidence(facts, primary, others),
    suggested_fixes: [...(primary.match.fixes ?? []), ...primary.entry.fixes],
    retry_advice: `${advice} ${automaticRetry(retry).sentence}`,
    retry,
    cause_id: primary.entry.id,
  };
}

/**
 * The matches with the family second chance first when the best one is a generic fallback
 * (an unrecognised exception, a bare non-zero exit): the deciding error's words may still
 * name a family of causes (memory, NaN, shapes, the network…) that no specific pattern knew
 * in this library's words. A specific match is never replaced.
 */
function secondChance(facts: FailureFacts, catalogue: readonly CauseEntry[], found: Found[]) {
  const primary = found[0];
  if (!FALLBACK_CAUSE_IDS.has(primary.entry.id) || primary.match.authoritative) return found;
  const first = primary.match.evidence[0];
  const quoted = first?.kind === "log"
    ? facts.lines.find((l) => l.seq === first.line_no && first.detail.includes(excerpt(l.raw))) ??
      null
    : null;
  const family = familySecondChance(facts, catalogue, quoted);
  if (!family) return found;
  const order = catalogue.indexOf(family.entry);
  return [{ entry: family.entry, order, match: family.match }, ...found];
}

// A warning is evidence at most: it decides only when nothing else failed.
const WARNING = /\bwarn(?:ing)?s?\b|UserWarning|FutureWarning|DeprecationWarning/i;

/**
 * How a match ranks before its confidence: the control plane's own record first; then a
 * specific cause found on a deciding line (the final exception of the last traceback, a
 * launcher's summary of its failing child); a warning line last. Within a rank, confidence.
 */
function rank(facts: FailureFacts, f: Found): number {
  if (f.match.authoritative) return 1;
  if (FALLBACK_CAUSE_IDS.has(f.entry.id)) return -1;
  const first = f.match.evidence[0];
  if (!first || first.kind !== "log" || first.line_no === undefined) return 0;
  const lines = facts.lines.filter((l) => l.seq === first.line_no);
  // A weak match (a library's name, not its error) explains nothing by being there.
  const weak = f.match.confidence < 0.7;
  if (!weak && lines.some((l) => facts.deciding.has(l))) return 0.3;
  if (!weak && facts.lastError && lines.includes(facts.lastError)) return 0.1;
  return lines.every((l) => WARNING.test(l.text)) ? -0.3 : 0;
}

function sameFact(a: Evidence, b: Evidence): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case "log":
      return a.line_no === b.line_no;
    case "event":
      return a.detail.startsWith(b.detail) || b.detail.startsWith(a.detail);
    default:
      // One exit code, one signal, one failure class per run, however each entry words it.
      return true;
  }
}

/**
 * The primary's evidence, then the secondary findings: the strongest fact of every other
 * matching cause, noted "(also fits: …)", and whatever the traceback fallback adds; last the
 * exit code and signal when no cause quoted them.
 */
function mergeEvidence(facts: FailureFacts, primary: Found, others: Found[]): Evidence[] {
  const evidence = primary.match.evidence.map((e) => withContinuation(facts, e));
  const add = (item: Evidence, note: string) => {
    const same = evidence.find((e) => sameFact(e, item));
    if (!same) evidence.push({ ...item, detail: item.detail + note });
    else if (note && !same.detail.includes(note)) same.detail += note;
  };
  for (const other of others) {
    if (other.entry.id === "nonzero_exit") continue;
    if (FALLBACK_CAUSE_IDS.has(other.entry.id)) {
      for (const item of other.match.evidence) add(item, "");
    } else if (other.match.evidence[0]) {
      add(other.match.evidence[0], ` (also fits: ${other.entry.title})`);
    }
  }
  for (const fact of [exitCodeEvidence(facts), signalEvidence(facts)]) {
    if (fact) add(fact, "");
  }
  return evidence;
}

/**
 * A quote of a traceback's exception line, with the lines that continue its message
 * ("CUDA kernel errors might be asynchronously reported…", "\tsize mismatch for …").
 */
function withContinuation(facts: FailureFacts, e: Evidence): Evidence {
  if (e.kind !== "log") return { ...e };
  const exception = facts.tracebacks.find((t) =>
    t.exception?.seq === e.line_no && t.continuation.length > 0 &&
    e.detail === excerpt(t.exception!.raw)
  );
  return exception
    ? logEvidence(exception.exception!, undefined, exception.continuation)
    : { ...e };
}

function unknown(facts: FailureFacts): Diagnosis {
  const lastLine = facts.lines.filter((l) => l.text.trim() !== "").at(-1);
  const notFailed = facts.status === "SUCCEEDED" ||
    (facts.exitCode === 0 && facts.failureClass === null);
  return {
    likely_cause: notFailed
      ? `No failure found: the run's status is ${facts.status}` +
        (facts.exitCode === null ? "" : ` and it exited with code ${facts.exitCode}`)
      : `No known failure signature: status ${facts.status}, ` +
        (facts.exitCode === null ? "no exit code" : `exit code ${facts.exitCode}`) +
        (lastLine ? "" : ", and no log lines"),
    confidence: 0.05,
    evidence: [
      ...[exitCodeEvidence(facts), signalEvidence(facts)].filter((e): e is Evidence => !!e),
      ...(facts.failureClass
        ? [{ kind: "failure_class" as const, detail: `failure class ${facts.failureClass}` }]
        : []),
    ],
    suggested_fixes: [
      "Read the run's full log (`gpuctl logs <run>`) and its events",
      "Run the command by hand in the job's working_dir on the node",
    ],
    retry_advice: notFailed
      ? `Nothing failed: the run ended normally. ${automaticRetry("not_a_failure").sentence}`
      : "A retry with the same configuration will most likely end the same way: nothing in " +
        "the exit status or the log tail points to a cause from outside the job. " +
        automaticRetry("fails_again").sentence,
    retry: notFailed ? "not_a_failure" : "fails_again",
    cause_id: "unknown",
  };
}
