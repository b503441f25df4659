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
}

const HEADER = /^Traceback \(most recent call last\):\s*$/;
const FRAME = /^\s+File "([^"]+)", line (\d+), in (.+)$/;
const EXCEPTION = /^([A-Za-z_][\w.]*)(?::\s?(.*))?$/;
const EXCEPTION_NAME = /^_?[A-Z][a-z0-9]\w*$/;

// Exceptions that only report that a child process failed: the child's own traceback, earlier
// in the log, says why.
const WRAPPERS = /(?:^|\.)(?:ChildFailedError|CalledProcessError)$/;

/** Every traceback block of the log, oldest first. */
export function findTracebacks(lines: readonly LogLine[]): Traceback[] {
  const blocks: Traceback[] = [];
  let current: Traceback | null = null;
  for (const line of lines) {
    if (HEADER.test(line.text.trimStart())) {
      if (current) blocks.push(current);
      current = { header: line, frames: [], exception: null, type: null, message: "" };
      continue;
    }
    if (!current) continue;
    const text = line.text;
    if (text.trim() === "") continue;
    if (/^\s/.test(text)) {
      const frame = FRAME.exec(text);
      if (frame) {
        current.frames.push({
          file: frame[1],
          line: Number(frame[2]),
          func: frame[3],
          seq: line.seq,
        });
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
    current = null;
  }
  if (current) blocks.push(current);
  return blocks;
}

/**
 * The traceback that best explains the failure: the last one, unless it only wraps a child's
 * failure (torchrun's ChildFailedError), then the last one before it that does not.
 */
export function lastInformativeTraceback(lines: readonly LogLine[]): Traceback | null {
  const blocks = findTracebacks(lines);
  for (let i = blocks.length - 1; i >= 0; i--) {
    if (!WRAPPERS.test(blocks[i].type ?? "")) return blocks[i];
  }
  return blocks[blocks.length - 1] ?? null;
}
