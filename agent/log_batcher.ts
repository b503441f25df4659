/** Groups a job's output lines into `logs` frames: every ~250 ms, or at once past 500 lines. */
import { MAX_TEXT_LENGTH } from "../protocol/rest/fields.ts";
import { clip } from "./frames.ts";
import type { OutputLine } from "./runner/types.ts";

/** How long a line may wait for companions. */
export const LOG_FLUSH_MS = 250;
/** Lines that make a batch full. */
export const LOG_BATCH_LINES = 500;

/** Options of {@linkcode LogBatcher}. */
export interface LogBatcherOptions {
  /** Sends one batch (spools a frame); batches are sent one at a time, in order. */
  send(lines: OutputLine[]): Promise<void>;
  /** @default LOG_FLUSH_MS */
  flushMs?: number;
  /** @default LOG_BATCH_LINES */
  maxLines?: number;
  /** Runs `fn` after `ms`; returns what cancels it. Tests pass a manual clock. @default setTimeout */
  setTimer?: (fn: () => void, ms: number) => () => void;
}

/** The real clock. */
function realTimer(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
}

/** Collects lines and sends them in batches, in order. */
export class LogBatcher {
  #options: Required<LogBatcherOptions>;
  #pending: OutputLine[] = [];
  #cancelTimer: (() => void) | null = null;
  #chain: Promise<void> = Promise.resolve();

  constructor(options: LogBatcherOptions) {
    this.#options = {
      flushMs: LOG_FLUSH_MS,
      maxLines: LOG_BATCH_LINES,
      setTimer: realTimer,
      ...options,
    };
  }

  /** Adds a line; it is sent within `flushMs`. */
  add(line: OutputLine): void {
    this.#pending.push({ ...line, text: clip(line.text, MAX_TEXT_LENGTH) });
    if (this.#pending.length >= this.#options.maxLines) {
      void this.flush();
    } else if (this.#cancelTimer === null) {
      this.#cancelTimer = this.#options.setTimer(() => void this.flush(), this.#options.flushMs);
    }
  }

  /** Sends what is pending now; resolves when everything added so far was sent. */
  flush(): Promise<void> {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length > 0) {
      this.#chain = this.#chain.then(() => this.#options.send(batch));
    }
    return this.#chain;
  }
}
