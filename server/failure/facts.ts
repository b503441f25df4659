import { standardSignalName } from "../../protocol/signals.ts";
import type { FailureInput, LogTailLine } from "./failure_types.ts";
import { findTracebacks, informativeTraceback, type Traceback } from "./traceback.ts";

/** A log line with ANSI colours and launcher prefixes (`[rank0]:`, `[default0]:`) removed. */
export interface LogLine {
  seq: number;
  /** The line as logged, for quoting. */
  raw: string;
  /** The line cleaned for matching and traceback parsing. */
  text: string;
}

/** The input in the shape matchers want: clean lines, one signal name, the last traceback. */
export interface FailureFacts {
  input: FailureInput;
  lines: LogLine[];
  exitCode: number | null;
  /** "SIGKILL", "SIGSEGV", …: from the reported signal, a negative exit code or 128 + n. */
  signal: string | null;
  /** True when `signal` was read off the exit code (128 + n or -n), not reported. */
  signalFromExitCode: boolean;
  failureClass: string | null;
  status: string;
  traceback: Traceback | null;
  /** Every traceback of the tail, oldest first. */
  tracebacks: Traceback[];
  /**
   * The agent saw the kernel's OOM-kill counter of the job's memory cgroup rise: the only
   * proof that the host's OOM killer, not someone else, sent a SIGKILL. The agent reports it
   * as failure class OOM on a SIGKILL (a GPU OOM is class OOM too, but not a SIGKILL).
   */
  oomKillCounterRose: boolean;
  /** Lines a traceback quotes from source files: code, never a message. */
  quotedSource: ReadonlySet<LogLine>;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const LAUNCHER_PREFIX = /^\s*\[(?:rank|default)\d+\]:\s?/;

/** "SIGKILL" for "SIGKILL", "kill", "9" or "Killed"; the input upper-cased when unknown. */
export function normalizeSignal(signal: string): string {
  const s = signal.trim();
  if (/^\d+$/.test(s)) return standardSignalName(Number(s)) ?? `signal ${s}`;
  const upper = s.toUpperCase();
  if (upper === "KILLED") return "SIGKILL";
  return upper.startsWith("SIG") ? upper : `SIG${upper}`;
}

/** Splits multi-line entries, strips colours and launcher prefixes; keeps each line's seq. */
export function cleanLines(tail: readonly LogTailLine[]): LogLine[] {
  const lines: LogLine[] = [];
  for (const { seq, text } of tail) {
    for (const part of text.split("\n")) {
      const raw = part.replace(/\r$/, "").replace(ANSI, "");
      lines.push({ seq, raw, text: raw.replace(LAUNCHER_PREFIX, "") });
    }
  }
  return lines;
}

/** Builds the facts every matcher reads. */
export function buildFacts(input: FailureInput): FailureFacts {
  const lines = cleanLines(input.log_tail);
  const exitCode = input.exit_code;
  let signal = input.signal ? normalizeSignal(input.signal) : null;
  let signalFromExitCode = false;
  if (signal === null && exitCode !== null) {
    // Python's subprocess reports -n, shells and container runtimes 128 + n.
    const n = exitCode < 0 ? -exitCode : exitCode > 128 && exitCode <= 159 ? exitCode - 128 : 0;
    if (n > 0) {
      signal = standardSignalName(n) ?? `signal ${n}`;
      signalFromExitCode = true;
    }
  }
  const failureClass = input.failure_class ? input.failure_class.toUpperCase() : null;
  const tracebacks = findTracebacks(lines);
  return {
    input,
    lines,
    exitCode,
    signal,
    signalFromExitCode,
    failureClass,
    status: input.status.toUpperCase(),
    traceback: informativeTraceback(tracebacks),
    tracebacks,
    oomKillCounterRose: failureClass === "OOM" && signal === "SIGKILL",
    quotedSource: new Set(tracebacks.flatMap((tb) => tb.source)),
  };
}

/** The lines that continue `line`'s message when it is a traceback's exception line. */
export function continuationOf(facts: FailureFacts, line: LogLine): LogLine[] {
  return facts.tracebacks.find((tb) => tb.exception === line)?.continuation ?? [];
}
