/** What the catalogue reads from a failed run: cleaned log lines (colours and rank prefixes gone), the exit, the signal. */
import { standardSignalName } from "../../lib/signals.ts";
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
   * proof that the OOM killer, not someone else, sent a SIGKILL. The agent reports it as
   * failure class OOM (a GPU OOM is class OOM too, with its message in the log).
   */
  oomKillCounterRose: boolean;
  /** Lines a traceback quotes from source files: code, never a message. */
  quotedSource: ReadonlySet<LogLine>;
  /**
   * The lines that state the failure, which outrank warnings and earlier noise: the
   * exceptions of the last traceback chain (the final one and those it was raised from or
   * while handling), a launcher's summary of its first failing child, and, with no
   * traceback, the last line that reads as an error.
   */
  deciding: ReadonlySet<LogLine>;
  /**
   * With neither a traceback nor a launcher's report: the last line that reads as an error
   * (not a warning, not a consequence such as a C++ abort's `terminate called`). A guess, so
   * it weighs less than {@linkcode deciding}.
   */
  lastError: LogLine | null;
  /** The first failing child as a launcher (torchrun, DeepSpeed, mp.spawn) reported it, or null. */
  child: ChildFailure | null;
}

/** A launcher's report of the child process that failed first. */
export interface ChildFailure {
  /** The line that reports it. */
  line: LogLine;
  /** "SIGKILL", … when the child died of a signal. */
  signal: string | null;
  exitCode: number | null;
  rank: number | null;
  localRank: number | null;
  pid: number | null;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
// Prefixes that launchers and loggers put before each line of a process's output: torchrun's
// `[rank0]:`, accelerate's `[default0]:`, Ray's and vLLM's `(raylet) ` / `(VllmWorker rank=2
// pid=225) `, `vllm-1  | ` of Docker Compose, a vLLM logger's `ERROR 04-30 10:20:36
// [core.py:396] `, `stderr: ` of a wrapper, and one timestamp-and-tags header.
const LAUNCHER_PREFIXES = [
  /^\s*\[(?:rank|default)\d+\]:\s?/,
  /^\((?:raylet|[\w.]+(?: rank=\d+)? pid=\d+)\)\s/,
  /^[\w.-]+-\d+\s+\|\s/,
  /^(?:ERROR|WARNING|INFO|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[\w./-]+:\d+\]|[\w./-]+:\d+\]) ?/,
  /^stderr: /,
  /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.,]\d+ (?:\[[^\]]*\] ){1,3}/,
];

/** A line without the prefixes launchers and loggers add (several may stack). */
function stripPrefixes(line: string): string {
  let text = line;
  for (let i = 0; i < 4; i++) {
    const re = LAUNCHER_PREFIXES.find((p) => p.test(text));
    if (!re) break;
    text = text.replace(re, "");
  }
  return text;
}

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
      lines.push({ seq, raw, text: stripPrefixes(raw) });
    }
  }
  return lines;
}

/**
 * The lines without the indentation they all share: a log quoted inside an indented block
 * (a report, a notebook cell) keeps its traceback's own indentation only.
 */
function dedented(lines: LogLine[]): LogLine[] {
  const said = lines.filter((l) => l.text.trim() !== "");
  if (said.length === 0) return lines;
  const indent = Math.min(...said.map((l) => /^[ \t]*/.exec(l.text)![0].length));
  if (indent === 0) return lines;
  return lines.map((l) => ({ ...l, text: l.text.slice(Math.min(indent, l.text.length)) }));
}

/** Builds the facts every matcher reads. */
export function buildFacts(input: FailureInput): FailureFacts {
  const lines = dedented(cleanLines(input.log_tail));
  const exitCode = input.exit_code;
  let signal = input.signal ? normalizeSignal(input.signal) : null;
  let signalFromExitCode = false;
  if (signal === null && exitCode !== null) {
    // Python's subprocess reports -n, shells and container runtimes 128 + n, and a launcher
    // that passes a child's -n to sys.exit() exits with 256 - n (DeepSpeed: 247 for -9).
    const n = exitCode < 0
      ? -exitCode
      : exitCode > 128 && exitCode <= 159
      ? exitCode - 128
      : LAUNCHER_SIGNALS.has(256 - exitCode)
      ? 256 - exitCode
      : 0;
    if (n > 0) {
      signal = standardSignalName(n) ?? `signal ${n}`;
      signalFromExitCode = true;
    }
  }
  const failureClass = input.failure_class ? input.failure_class.toUpperCase() : null;
  const tracebacks = findTracebacks(lines);
  const child = childFailure(lines);
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
    // Class OOM is the GPU's too: without a SIGKILL it is the counter only when no line
    // says the GPU ran out of memory (a DataLoader worker killed while the main process
    // exits 1).
    oomKillCounterRose: failureClass === "OOM" &&
      (signal === "SIGKILL" || !lines.some((l) => GPU_OOM_LINE.test(l.text))),
    quotedSource: new Set(tracebacks.flatMap((tb) => tb.source)),
    deciding: decidingLines(lines, tracebacks, child),
    lastError: lastErrorLine(lines, tracebacks, child),
    child,
  };
}

// What the agent calls a GPU out-of-memory (agent/runner/classify_exit.ts CUDA_OOM_PATTERN).
const GPU_OOM_LINE =
  /CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation/;

// Signals a launcher's 256 - n exit status is read as: the ones that end training processes.
const LAUNCHER_SIGNALS = new Set([6, 7, 9, 11, 15]);

// A launcher's line on a failed child: torchrun's `failed (exitcode: -9) local_rank: 3 (pid:
// 812917)`, its Root Cause block (`exitcode  : -9 (pid: 14750)`, `traceback : Signal 9
// (SIGKILL) received by PID 14750`), DeepSpeed's `exits with return code = -9`, mp.spawn's
// `process 1 terminated with signal SIGKILL`.
const CHILD_LINES: readonly RegExp[] = [
  /Signal (\d+) \((SIG[A-Z]+)\) received by PID (\d+)/i,
  /failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)/,
  /exitcode\s*: (-?\d+) \(pid: (\d+)\)/,
  /exits with return code = (-?\d+)/,
  /process (\d+) terminated with (?:signal (SIG[A-Z]+)|exit code (\d+))/,
  // A Python launcher's (`accelerate launch`, a wrapper script's) subprocess call:
  // `subprocess.CalledProcessError: Command '[…]' returned non-zero exit status -11.`
  /CalledProcessError: .*returned non-zero exit status (-?\d+)/,
  // A pipeline script's report on the step it ran: DeepSpeed-Chat's `RuntimeError: Step 1
  // exited with non-zero status 2`.
  /\bStep \d+ exited with non-zero status (-?\d+)/,
];

/** The first failing child a launcher reported, with its signal, rank and pid when given. */
export function childFailure(lines: readonly LogLine[]): ChildFailure | null {
  let found: ChildFailure | null = null;
  let rank: number | null = null;
  let localRank: number | null = null;
  for (const line of lines) {
    const t = line.text;
    const r = /\brank\s*:?\s*(\d+)\s*\(local[_ ]rank:?\s*(\d+)\)/.exec(t);
    if (r) [rank, localRank] = [Number(r[1]), Number(r[2])];
    let m: RegExpExecArray | null;
    let next:
      | { signal: string | null; exitCode: number | null; pid: number | null; localRank?: number }
      | null = null;
    if ((m = CHILD_LINES[0].exec(t))) {
      next = { signal: m[2].toUpperCase(), exitCode: -Number(m[1]), pid: Number(m[3]) };
    } else if ((m = CHILD_LINES[1].exec(t))) {
      next = { ...byCode(Number(m[1])), pid: Number(m[3]), localRank: Number(m[2]) };
    } else if ((m = CHILD_LINES[2].exec(t))) {
      next = { ...byCode(Number(m[1])), pid: Number(m[2]) };
    } else if ((m = CHILD_LINES[3].exec(t))) {
      // DeepSpeed quotes the child's command line, with its --local_rank.
      const local = /--local_rank=(\d+)/.exec(t);
      next = {
        ...byCode(Number(m[1])),
        pid: null,
        ...(local ? { localRank: Number(local[1]) } : {}),
      };
    } else if ((m = CHILD_LINES[4].exec(t))) {
      next = m[2]
        ? { signal: m[2], exitCode: null, pid: null, localRank: Number(m[1]) }
        : { signal: null, exitCode: Number(m[3]), pid: null, localRank: Number(m[1]) };
    } else if ((m = CHILD_LINES[5].exec(t) ?? CHILD_LINES[6].exec(t))) {
      next = { ...byStatus(Number(m[1])), pid: null };
    }
    if (!next) continue;
    // The Root Cause block repeats what the `failed (exitcode …)` line said: keep the first
    // failing child, adding what a later line tells about the same one.
    if (found && found.pid !== null && next.pid !== null && found.pid !== next.pid) continue;
    found = merged(found, { ...next, line, rank, localRank: next.localRank ?? localRank });
  }
  return found;
}

// What a later line says about the same child, added to what an earlier one said.
function merged(prev: ChildFailure | null, next: ChildFailure): ChildFailure {
  if (!prev) return next;
  return {
    line: prev.signal && !next.signal ? prev.line : next.line,
    signal: next.signal ?? prev.signal,
    exitCode: next.exitCode ?? prev.exitCode,
    pid: next.pid ?? prev.pid,
    rank: next.rank ?? prev.rank,
    localRank: next.localRank ?? prev.localRank,
  };
}

// Windows' exit status for an access violation (0xC0000005): its segmentation fault.
const WINDOWS_ACCESS_VIOLATION = 3221225477;

/**
 * A child's exit status as a subprocess call reports it: negative for the signal that ended
 * it, 128 + n when a shell in between reported signal n, Windows' access violation as SIGSEGV.
 */
function byStatus(status: number): { signal: string | null; exitCode: number } {
  if (status === WINDOWS_ACCESS_VIOLATION) return { signal: "SIGSEGV", exitCode: status };
  if (status > 128 && LAUNCHER_SIGNALS.has(status - 128)) {
    return { signal: standardSignalName(status - 128), exitCode: status };
  }
  return byCode(status);
}

function byCode(code: number): { signal: string | null; exitCode: number } {
  return {
    signal: code < 0 ? standardSignalName(-code) ?? `signal ${-code}` : null,
    exitCode: code,
  };
}

// A line that reads as the statement of an error: `SomeError: …`, `ERROR: …`, a glog-style
// `[E …]` or `E0325 …` record, a timeout, the shell's report of a crash.
const ERROR_LINE =
  /^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault)\b|^\s*(?:ERROR|FATAL|CRITICAL)\b|^\s*\w*Error:|\berror\b.*:|^\s*\[?[EF](?:\d{4}| )|\btimed? ?out\b|^\s*(?:Segmentation fault|Killed|Aborted)\b/i;
// Lines that only report that something already failed: a C++ runtime aborting on an uncaught
// exception, a launcher tearing down the other workers.
const CONSEQUENCE_LINE =
  /terminate called after throwing|^\s*what\(\):|Aborted \(core dumped\)|Killing subprocess|closing signal SIG/;
// Warnings: evidence at most, never the deciding line.
const WARNING_LINE = /\bwarn(?:ing)?s?\b|UserWarning|FutureWarning|DeprecationWarning/i;

/** The deciding lines of {@linkcode FailureFacts}. */
function decidingLines(
  lines: readonly LogLine[],
  tracebacks: readonly Traceback[],
  child: ChildFailure | null,
): Set<LogLine> {
  const out = new Set<LogLine>();
  const chain = lastChain(lines, tracebacks);
  for (const tb of chain) {
    if (!tb.exception) continue;
    out.add(tb.exception);
    for (const l of tb.continuation) out.add(l);
  }
  if (child) out.add(child.line);
  return out;
}

/** The {@linkcode FailureFacts.lastError} line. */
function lastErrorLine(
  lines: readonly LogLine[],
  tracebacks: readonly Traceback[],
  child: ChildFailure | null,
): LogLine | null {
  if (child || lastChain(lines, tracebacks).length > 0) return null;
  const said = lines.filter((l) => l.text.trim() !== "");
  return said.findLast((l) =>
    ERROR_LINE.test(l.text) && !WARNING_LINE.test(l.text) && !CONSEQUENCE_LINE.test(l.text)
  ) ?? said.at(-1) ?? null;
}

// Python prints a chain of exceptions as tracebacks joined by these lines.
const CHAINED =
  /^\s*(?:During handling of the above exception|The above exception was the direct cause)/;
const IGNORED = /^\s*Exception ignored in\b/;

/**
 * The last chain of tracebacks that has an exception line: the last such traceback and those
 * joined to it by "During handling of the above exception" or "The above exception was the
 * direct cause". A traceback printed under "Exception ignored in" (a destructor's noise at
 * shutdown) and a wrapper of a child's failure are never the end of the chain.
 */
function lastChain(lines: readonly LogLine[], tracebacks: readonly Traceback[]): Traceback[] {
  const index = new Map(lines.map((l, i) => [l, i]));
  const ignored = (tb: Traceback) => {
    const i = index.get(tb.header) ?? 0;
    return lines.slice(Math.max(0, i - 2), i).some((l) => IGNORED.test(l.text));
  };
  const usable = tracebacks.filter((tb) => !ignored(tb) && !WRAPPER.test(tb.type ?? ""));
  let end = usable.length - 1;
  while (end >= 0 && !usable[end].exception) end--;
  if (end < 0) return [];
  const chain = [usable[end]];
  // A later traceback cut off by the tail still belongs to the chain: the one before it stays.
  for (let i = end; i > 0; i--) {
    const from = index.get(usable[i - 1].exception ?? usable[i - 1].header) ?? 0;
    const to = index.get(usable[i].header) ?? 0;
    if (!lines.slice(from, to).some((l) => CHAINED.test(l.text))) break;
    chain.unshift(usable[i - 1]);
  }
  return chain;
}

const WRAPPER = /(?:^|\.)(?:ChildFailedError|CalledProcessError|ProcessRaisedException)$/;

/** The lines that continue `line`'s message when it is a traceback's exception line. */
export function continuationOf(facts: FailureFacts, line: LogLine): LogLine[] {
  return facts.tracebacks.find((tb) => tb.exception === line)?.continuation ?? [];
}
