/** Python tracebacks in a log: each block's frames and its final `Type: message` line, the last one deciding. */
import type { LogLine } from "./facts.ts";

/** One `Traceback (most recent call last):` block of a Python log. */
export interface Traceback {
  /** The `Traceback …` header line. */
  header: LogLine;
  frames: { file: string; line: number; func: string; seq: number }[];
  /** The final `Type: message` line, or null when the log ends inside the block. */
  exception: LogLine | null;
  /** The exception's type as printed ("torch.OutOfMemoryError"), or null. */
  type: string | null;
  message: string;
  /** The lines after the exception line that continue its message (`\tsize mismatch for …`). */
  continuation: LogLine[];
  /** The source lines the frames quote (`    raise ValueError(f"loss is {loss}")`). */
  source: LogLine[];
}

const HEADER = /^Traceback \(most recent call last\):\s*$/;
const FRAME = /^\s+File "([^"]+)", line (\d+), in (.+)$/;
// A frame that opens a tail cut inside a traceback: pasted without its indent (`File
// "main.py", line 34, in <module>`) or cut inside the path (`/trl/trainer/x.py", line 269, in
// __init__`).
const CUT_FRAME = /^\s*(?:File ")?([^"\s][^"]*)", line (\d+), in (.+)$/;
const EXCEPTION = /^([A-Za-z_][\w.]*)(?::\s?(.*))?$/;
// CamelCase (`ValueError`, `Exception`), or capitals before a telling suffix (`OSError`,
// `IOError`, `EOFError`), but not a logger's `INFO` or `WARNING`.
const EXCEPTION_NAME =
  /^_?[A-Z][a-z0-9]\w*$|^_?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure|Timeout)$/;

// Exceptions that only report that a child process failed: the child's own traceback, earlier
// in the log, says why.
const WRAPPERS = /(?:^|\.)(?:ChildFailedError|CalledProcessError)$/;

function frameOf(line: LogLine): Traceback["frames"][number] {
  const [, file, n, func] = (FRAME.exec(line.text) ?? CUT_FRAME.exec(line.text))!;
  return { file, line: Number(n), func, seq: line.seq };
}

/** Every traceback block of the log, oldest first. */
export function findTracebacks(lines: readonly LogLine[]): Traceback[] {
  const blocks: Traceback[] = [];
  let current: Traceback | null = null;
  let continued: Traceback | null = null;
  for (const line of lines) {
    if (continued) {
      if (continues(continued, line)) {
        continued.continuation.push(line);
        continue;
      }
      continued = null;
    }
    // A tail can begin inside a traceback, after its header: its first frame opens the block.
    const opens = HEADER.test(line.text.trimStart()) ||
      (!current && (FRAME.test(line.text) || CUT_FRAME.test(line.text)));
    if (opens) {
      if (current) blocks.push(current);
      current = {
        header: line,
        frames: [],
        exception: null,
        type: null,
        message: "",
        continuation: [],
        source: [],
      };
      if (!HEADER.test(line.text.trimStart())) current.frames.push(frameOf(line));
      continue;
    }
    if (!current) continue;
    const text = line.text;
    if (text.trim() === "") continue;
    if (/^\s/.test(text)) {
      if (FRAME.test(text)) {
        current.frames.push(frameOf(line));
      } else {
        current.source.push(line);
      }
      continue;
    }
    const m = EXCEPTION.exec(text.trim());
    // Another process's output interleaved into the block (a logger's "INFO: …") is skipped:
    // exception types are CamelCase names, possibly dotted.
    if (!m || !EXCEPTION_NAME.test(m[1].split(".").pop()!)) continue;
    current.exception = line;
    current.type = m[1];
    current.message = m[2] ?? "";
    blocks.push(current);
    continued = current;
    current = null;
  }
  if (current) blocks.push(current);
  return blocks;
}

/** Continuation lines kept for one exception message. */
const MAX_CONTINUATION = 12;
// A line that starts a record of its own: a logger's, a launcher's or a progress bar's.
const NEW_RECORD =
  /^\s*(?:\[?\d{4}-\d\d-\d\d|[EWIF]\d{4} |\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|(?:INFO|WARNING|ERROR):|wandb:|Epoch \d|\d+%\|)/;

// Whether `line` continues the message of `tb`'s exception: printed right after it, not
// blank, not a new traceback or log record, and within the limit. Python prints a message
// with newlines as is, so its later lines carry no mark of their own.
function continues(tb: Traceback, line: LogLine): boolean {
  const text = line.text;
  if (text.trim() === "" || tb.continuation.length >= MAX_CONTINUATION) return false;
  if (HEADER.test(text.trimStart()) || NEW_RECORD.test(text)) return false;
  if (/^\s*(?:During handling of the above exception|The above exception was)/.test(text)) {
    return false;
  }
  return tb.exception !== null && line.seq - tb.exception.seq <= MAX_CONTINUATION + 1;
}

// Files of the Python installation or of installed packages, not the job's own code.
const LIBRARY_FILE =
  /[\\/](?:site-packages|dist-packages)[\\/]|[\\/]lib(?:64)?[\\/]python\d+(?:\.\d+)?[\\/]|[\\/]Lib[\\/]|^<[^>]*>$/;

/**
 * Where the exception was raised, as a person would look for it: the deepest frame outside
 * the Python installation and site-packages (`model.py:59`, not torch's `linear.py`), or the
 * deepest frame when every frame is library code.
 */
export function raisedAt(tb: Traceback): Traceback["frames"][number] | null {
  return tb.frames.findLast((f) => !LIBRARY_FILE.test(f.file)) ?? tb.frames.at(-1) ?? null;
}

/**
 * The traceback that best explains the failure: the last one, unless it only wraps a child's
 * failure (torchrun's ChildFailedError), then the last one before it that does not.
 */
export function lastInformativeTraceback(lines: readonly LogLine[]): Traceback | null {
  return informativeTraceback(findTracebacks(lines));
}

/** {@linkcode lastInformativeTraceback} of blocks already found. */
export function informativeTraceback(blocks: readonly Traceback[]): Traceback | null {
  for (let i = blocks.length - 1; i >= 0; i--) {
    if (!WRAPPERS.test(blocks[i].type ?? "")) return blocks[i];
  }
  return blocks[blocks.length - 1] ?? null;
}
