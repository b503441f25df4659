/** What a cause of the catalogue is: how it matches a failed run's facts, its fixes and its retry verdict. */
import type { FailureFacts, LogLine } from "./facts.ts";
import type { Evidence } from "./failure_types.ts";

/** What retrying the same configuration can be expected to do. */
export type RetryVerdict =
  /** The same command on the same inputs fails the same way. */
  | "fails_again"
  /** The failure came from outside the training code; a retry may succeed. */
  | "may_help"
  /** Nothing failed (a cancel). */
  | "not_a_failure"
  /** Cannot tell: no catalogue entry decides so any more (kept for diagnoses stored before). */
  | "unknown";

/** A catalogue entry's finding on one run. */
export interface CauseMatch {
  /** 0..1: how specific this match is; the highest wins. */
  confidence: number;
  likely_cause: string;
  /** The evidence, strongest first; log evidence carries the line's seq. */
  evidence: Evidence[];
  /** Fixes specific to this match, listed before the entry's general ones. */
  fixes?: string[];
  /** Replaces the entry's retry advice when this match knows better. */
  retry_advice?: string;
  /** Replaces the entry's verdict when this match knows better (with `retry_advice`). */
  retry?: RetryVerdict;
  /**
   * The control plane's own record of how the run ended (a cancel, a lost node): it outranks
   * anything the log says.
   */
  authoritative?: boolean;
}

/** One known cause of failure: data (id, fixes, retry advice) plus a matcher. */
export interface CauseEntry {
  id: string;
  /** Short name, used when the entry is a secondary finding: "CUDA out of memory". */
  title: string;
  retry: RetryVerdict;
  retry_advice: string;
  fixes: readonly string[];
  match(facts: FailureFacts): CauseMatch | null;
}

/** A matching line and its regex match. */
export interface LineHit {
  line: LogLine;
  match: RegExpExecArray;
}

const MAX_DETAIL = 300;

// Stack frames name the functions a failure passed through, not the failure: a C++ frame
// (`frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout…`) or a Python one
// (`  File ".../nccl.py", line 3`) never decides, nor the source line a frame quotes.
const STACK_FRAME = /^\s*(?:frame #\d+:|File "[^"]*", line \d+)/;

/**
 * The strongest match: `patterns` run from the strongest to the weakest, and the first
 * pattern that matches a line (not a stack frame) wins; of its lines, a deciding one (the
 * final exception, a launcher's summary of its failing child) first, then the first line (or
 * the last, with `last`). With `decidingFirst`, a deciding line that any pattern matches wins
 * over every other line: for causes whose words also appear in lines printed before the
 * failure (a progress line's `loss nan` before the exception that stopped the run).
 */
export function findLine(
  facts: FailureFacts,
  patterns: readonly RegExp[],
  opts: { last?: boolean; unless?: RegExp; decidingFirst?: boolean } = {},
): LineHit | null {
  const lines = facts.lines;
  const deciding = lines.filter((l) => facts.deciding.has(l));
  if (opts.decidingFirst) {
    for (const re of patterns) {
      const hit = search(facts, deciding, re, opts);
      if (hit) return hit;
    }
  }
  for (const re of patterns) {
    const hit = search(facts, deciding, re, opts) ?? search(facts, lines, re, opts);
    if (hit) return hit;
  }
  return null;
}

function search(
  facts: FailureFacts,
  lines: readonly LogLine[],
  re: RegExp,
  opts: { last?: boolean; unless?: RegExp },
): LineHit | null {
  for (let k = 0; k < lines.length; k++) {
    const line = lines[opts.last ? lines.length - 1 - k : k];
    if (STACK_FRAME.test(line.text) || facts.quotedSource.has(line)) continue;
    if (opts.unless?.test(line.text)) continue;
    const match = re.exec(line.text);
    if (match) return { line, match };
  }
  return null;
}

/** A log line, trimmed and shortened, for quoting in messages. */
export function excerpt(text: string, max = MAX_DETAIL): string {
  const t = text.trim();
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

/** The longest quote of a line with its continuation lines. */
const MAX_BLOCK = 1200;

/**
 * Log evidence for a line: its text and its seq. `continuation` lines (a multi-line
 * exception message) follow it, one per line, so the quote names what the first line only
 * announces ("Error(s) in loading state_dict for Net:" and the tensors after it).
 */
export function logEvidence(
  line: LogLine,
  note?: string,
  continuation: readonly LogLine[] = [],
): Evidence {
  const quoted = continuation.length === 0 ? excerpt(line.raw) : excerpt(
    [line.raw, ...continuation.map((l) => l.raw)].map((t) => t.trim()).join("\n"),
    MAX_BLOCK,
  );
  return { kind: "log", detail: note ? `${note}: ${quoted}` : quoted, line_no: line.seq };
}

/** Evidence for the exit code, with the signal it encodes when it encodes one. */
export function exitCodeEvidence(facts: FailureFacts): Evidence | null {
  if (facts.exitCode === null) return null;
  const code = facts.exitCode;
  const note = facts.signalFromExitCode && facts.signal
    ? code < 0
      ? ` (killed by ${facts.signal})`
      : code > 159
      ? ` (256 - ${256 - code}: a launcher passing on its child's -${256 - code}, killed by ` +
        `${facts.signal})`
      : ` (128 + ${code - 128}: killed by ${facts.signal})`
    : "";
  return { kind: "exit_code", detail: `exit code ${code}${note}` };
}

/** Evidence for a reported signal (not one read off the exit code). */
export function signalEvidence(facts: FailureFacts): Evidence | null {
  if (!facts.signal || facts.signalFromExitCode) return null;
  return { kind: "signal", detail: `terminated by ${facts.signal}` };
}

/**
 * Evidence that the process died of `signals`, from the signal or the exit code, or that the
 * first failing child a launcher reported did (`exitcode: -9`, `Signal 9 (SIGKILL)`).
 */
export function killedBy(facts: FailureFacts, signals: readonly string[]): Evidence | null {
  const child = facts.child;
  if (child?.signal && signals.includes(child.signal)) {
    const name = childName(facts) ?? "a child process";
    return logEvidence(child.line, `${name} died of ${child.signal}`);
  }
  if (!facts.signal || !signals.includes(facts.signal)) return null;
  return facts.signalFromExitCode ? exitCodeEvidence(facts) : signalEvidence(facts);
}

/**
 * "rank 0 (local rank 0, pid 14750)", "local rank 4 (pid 899509)": the first failing child as
 * the launcher named it, or null when no launcher reported one (or named it not at all).
 */
export function childName(facts: FailureFacts): string | null {
  const c = facts.child;
  if (!c) return null;
  const head = c.rank !== null
    ? `rank ${c.rank}`
    : c.localRank !== null
    ? `local rank ${c.localRank}`
    : c.pid !== null
    ? `pid ${c.pid}`
    : null;
  if (head === null) return null;
  const parts = [
    c.rank !== null && c.localRank !== null ? `local rank ${c.localRank}` : null,
    c.pid !== null && !head.startsWith("pid") ? `pid ${c.pid}` : null,
  ].filter((x): x is string => x !== null);
  return parts.length ? `${head} (${parts.join(", ")})` : head;
}

/** The signal the process, or the first failing child a launcher reported, died of. */
export function deathSignal(facts: FailureFacts): string | null {
  return facts.child?.signal ?? facts.signal;
}

/** Evidence for the failure class the control plane recorded. */
export function failureClassEvidence(facts: FailureFacts, note = ""): Evidence {
  return { kind: "failure_class", detail: `failure class ${facts.failureClass}${note}` };
}

/** Evidence lists without the nulls. */
export function present(...items: (Evidence | null | undefined)[]): Evidence[] {
  return items.filter((e): e is Evidence => e != null);
}

/** Caps a confidence at 0.99: nothing read off a log tail is certain. */
export function capped(confidence: number): number {
  return Math.min(0.99, Math.round(confidence * 100) / 100);
}
