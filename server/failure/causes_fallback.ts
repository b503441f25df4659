/** The catalogue's last resorts: an unrecognised Python exception, or a nonzero exit with nothing more to go on. */
import {
  type CauseEntry,
  type CauseMatch,
  childName,
  excerpt,
  exitCodeEvidence,
  logEvidence,
  present,
  signalEvidence,
} from "./cause.ts";
import type { FailureFacts, LogLine } from "./facts.ts";
import { raisedAt } from "./traceback.ts";
import { NETWORK_TYPES } from "./family_vocabulary.ts";

// An error no entry knows that still reads as a network failure: decided as transient, like
// the network failures the catalogue knows by name.
const NETWORK_WORDS =
  /\b(?:timed? ?out|connection (?:refused|reset|aborted|closed|error)|network is unreachable|temporarily unavailable|temporary failure in name resolution|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH)\b/i;
// Exception types that are network failures whatever their message (`TimeoutError` with none,
// `requests.exceptions.ChunkedEncodingError`, `socket.gaierror`): transient the same way.
const NETWORK_TYPE = new RegExp(`(?:^|\\.)(?:${NETWORK_TYPES.join("|")})$`);
const NETWORK_ADVICE = {
  retry: "may_help" as const,
  retry_advice: "A retry may help: the error reads as a network failure (a timeout, a refused " +
    "or reset connection), which is often transient. If it recurs at the same point, check " +
    "the address and the network first.",
};

/** The network advice when an exception's text or type reads as a network failure. */
function networkAdvice(text: string, type: string) {
  return NETWORK_WORDS.test(text) || NETWORK_TYPE.test(type) ? NETWORK_ADVICE : {};
}

/** How a card quotes an exception line that has no traceback of its own. */
function raisedQuote(line: LogLine): string {
  return `The training code raised "${excerpt(line.text.replace(/^\W+/, ""), 200)}"`;
}

// The exception a launcher raises to report that a child failed.
const LAUNCHER_REPORT = /(?:^|\.)(?:ChildFailedError|CalledProcessError)$/;

// The launchers' own files: torchrun (`bin/torchrun`, `torch/distributed/run.py`, its elastic
// agent), `torch.distributed.launch`, `accelerate launch`, the `deepspeed` runner.
const LAUNCHER_FILE =
  /(?:^|[\\/])(?:torchrun|accelerate|deepspeed)$|torch[\\/]distributed[\\/](?:run|launch)\.py$|torch[\\/]distributed[\\/](?:elastic|launcher)[\\/]|accelerate[\\/]commands[\\/]|deepspeed[\\/]launcher[\\/]|[\\/]runpy\.py$/;

function launcherFrame(frame: { file: string }): boolean {
  return LAUNCHER_FILE.test(frame.file);
}

/** A launcher reported its first failing child's exit status, not a signal. */
function plainChildStatus(facts: FailureFacts): boolean {
  return facts.child !== null && facts.child.signal === null && facts.child.exitCode !== null;
}

/** The last non-empty log lines, up to `n`. */
function lastLines(facts: FailureFacts, n: number): LogLine[] {
  return facts.lines.filter((l) => l.text.trim() !== "").slice(-n);
}

/** The training code raised a Python exception no other entry recognises. */
export const PYTHON_EXCEPTION_CAUSE: CauseEntry = {
  id: "python_exception",
  title: "Python exception",
  retry: "fails_again",
  retry_advice: "A retry with the same code and configuration will most likely fail the same " +
    "way: an exception raised by the training code repeats unless it came from something " +
    "flaky (a network download, a file still being written).",
  fixes: [
    "Read the traceback's last frames in your code and fix the error it names",
    "Reproduce quickly with a tiny run (fewer steps, a small subset) before resubmitting",
  ],
  match(facts) {
    const tb = facts.traceback;
    if (!tb) return bareException(facts);
    // A launcher's report that its child failed (`CalledProcessError: … returned non-zero exit
    // status 1`) is no exception of the training code: the child's own error is not in the
    // log, and the exit status says all that is known.
    if (facts.child && tb.exception && facts.child.line === tb.exception) {
      return childException(facts);
    }
    // torchrun's `ChildFailedError` over its table of failed children (`exitcode  : 1 (pid:
    // …)`) is its report too, when no traceback of the child is in the log: the last
    // informative traceback is then the launcher's own.
    if (facts.child && LAUNCHER_REPORT.test(tb.type ?? "")) return childException(facts);
    const where = raisedAt(tb);
    const at = where ? ` (in ${where.func}, ${where.file}:${where.line})` : "";
    if (!tb.exception) {
      // A launcher's own traceback, cut before its report, after a line on its child's plain
      // exit status (`failed (exitcode: 1) local_rank: 0 (pid: …)`): the launcher's, not the
      // training code's; the exit status says what is known.
      if (plainChildStatus(facts) && tb.frames.length > 0 && tb.frames.every(launcherFrame)) {
        return childException(facts);
      }
      return {
        confidence: 0.3,
        likely_cause: `The process printed a traceback${at} that the log tail cuts off`,
        evidence: present(logEvidence(tb.header), exitCodeEvidence(facts)),
      };
    }
    const network = networkAdvice(tb.exception.text, tb.type ?? "");
    return {
      ...network,
      confidence: 0.4,
      likely_cause: `The training code raised "${excerpt(tb.exception.text, 200)}"${at}`,
      evidence: present(
        logEvidence(tb.exception, "last traceback's exception", tb.continuation),
        where
          ? {
            kind: "log",
            detail: `raised at ${where.file}:${where.line} in ${where.func}`,
            line_no: where.seq,
          }
          : null,
        exitCodeEvidence(facts),
      ),
    };
  },
};

// An exception printed without its traceback (a logger's one-line report, a traceback the log
// tail cut): `ValueError: Bfloat16 is only supported…`,
// `pytorch_lightning.utilities.exceptions.MisconfigurationException: …`.
const BARE_EXCEPTION = /^\W*((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|Exception)): \S/;

// How far before JAX's `The error occurred while tracing the function f at train.py:10 for
// jit. …` its tracer error may be: JAX prints the exception, a hint or two (`If using jit, try
// using static_argnums …`), then where it was tracing.
const EXPLANATION_LINES = 4;

/**
 * A Python exception line with no traceback, when it is the log's last error, or when only
 * lines explaining it (no other exception) follow it.
 */
function bareException(facts: FailureFacts): CauseMatch | null {
  const last = facts.lastError;
  if (!last) return null;
  const line = BARE_EXCEPTION.test(last.text) ? last : explainedException(facts, last);
  if (!line) return null;
  return {
    ...networkAdvice(line.text, BARE_EXCEPTION.exec(line.text)?.[1] ?? ""),
    confidence: 0.35,
    likely_cause: `${raisedQuote(line)} (the log holds no traceback for it)`,
    evidence: present(logEvidence(line, "last error"), exitCodeEvidence(facts)),
  };
}

// The exception line before `last` when `last` is one of the lines that explain it, such as
// JAX's `The error occurred while tracing the function …`.
function explainedException(facts: FailureFacts, last: LogLine): LogLine | null {
  if (!/^The error occurred while tracing\b/.test(last.text)) return null;
  const said = facts.lines.filter((l) => l.text.trim() !== "");
  const at = said.indexOf(last);
  for (let k = at - 1; k >= 0 && k >= at - EXPLANATION_LINES; k--) {
    if (BARE_EXCEPTION.test(said[k].text)) return said[k];
  }
  return null;
}

// How many non-empty lines before a launcher's report of its child may hold the child's own
// exception line, printed without a traceback the parser reads (Rich's boxed traceback ends in
// one).
const CHILD_EXCEPTION_LINES = 3;

/**
 * The child's own exception, printed before the launcher reported the child's exit status: the
 * last traceback above the report that ends in an exception and is not the launcher's, or else
 * an exception line just above the report. The launcher's report says only that the child
 * failed; the child's exception says why.
 */
function childException(facts: FailureFacts): CauseMatch | null {
  const report = facts.child?.line;
  if (!report) return null;
  const own = facts.tracebacks.filter((t) =>
    t.exception !== null && t.exception.seq < report.seq &&
    !LAUNCHER_REPORT.test(t.type ?? "") && !t.frames.every(launcherFrame)
  ).at(-1);
  let line = own?.exception ?? null;
  if (!line) {
    const said = facts.lines.filter((l) => l.text.trim() !== "" && l.seq < report.seq);
    line = said.slice(-CHILD_EXCEPTION_LINES).reverse()
      .find((l) => BARE_EXCEPTION.test(l.text)) ?? null;
  }
  if (!line) return null;
  return {
    ...networkAdvice(line.text, own?.type ?? BARE_EXCEPTION.exec(line.text)?.[1] ?? ""),
    confidence: 0.4,
    likely_cause: `${raisedQuote(line)} before the launcher reported its exit`,
    evidence: present(
      logEvidence(line, "the child's exception", own?.continuation ?? []),
      logEvidence(report, "the launcher's report"),
      exitCodeEvidence(facts),
    ),
  };
}

/** The process exited non-zero with no recognisable message: quote the last lines. */
export const NONZERO_EXIT_CAUSE: CauseEntry = {
  id: "nonzero_exit",
  title: "non-zero exit",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will most likely fail the same way: the " +
    "process ended with an error status and the log shows no sign of a cause from outside the " +
    "job (a lost connection, a signal from outside, a hardware fault). Read the last lines first.",
  fixes: [
    "Read the last log lines (`gpuctl logs <run>`), and the full log on the node if the tail " +
    "is too short",
    "Run the command by hand in the job's working_dir on the node to see the error",
  ],
  match(facts) {
    const code = facts.exitCode;
    const signal = facts.signal;
    if ((code === null || code === 0) && !signal) return null;
    const tail = lastLines(facts, 3);
    const quoted = tail.map((l) => excerpt(l.raw, 160)).join(" | ");
    const how = code !== null && code !== 0 ? `exited with code ${code}` : `ended by ${signal}`;
    const network = tail.some((l) => NETWORK_WORDS.test(l.text)) ? NETWORK_ADVICE : {};
    const child = facts.child;
    if (child && plainChildStatus(facts)) {
      // A launcher's report of its child's status: the one line that says what failed.
      const who = childName(facts);
      return {
        ...network,
        confidence: 0.22,
        likely_cause: `The launcher reported that its child${who ? `, ${who},` : ""} exited ` +
          `with status ${child.exitCode}; the child's own error is not in the log tail`,
        evidence: present(
          logEvidence(child.line, "the launcher's report"),
          exitCodeEvidence(facts),
          ...tail.filter((l) => l !== child.line).map((l) => logEvidence(l, "last line")),
        ),
      };
    }
    return {
      ...network,
      confidence: 0.2,
      likely_cause: tail.length > 0
        ? `The process ${how}; its last lines: "${quoted}"`
        : `The process ${how} without printing anything`,
      evidence: present(
        exitCodeEvidence(facts),
        signalEvidence(facts),
        ...tail.map((l) => logEvidence(l, "last line")),
      ),
    };
  },
};
