/**
 * A background pass run on a slow timer and whenever something wakes it (bus messages):
 * triggers while one is pending join it, and a failed pass is logged, never thrown. The
 * sweep and budget loops are each one of these around their pass.
 */
import type { Logger } from "../lib/log.ts";

export interface PassLoopOptions {
  /** Names the pass in the log ("sweep" → "sweep pass failed"). */
  name: string;
  /** The backstop timer's period. */
  intervalMs: number;
  /** One pass; what it returns is the caller's. */
  pass: () => unknown;
  /** Subscribes what wakes the loop, given its trigger; returns the unsubscribes. */
  wake: (trigger: (delayMs?: number) => void) => (() => void)[];
}

export class PassLoop {
  #log: Logger;
  #o: PassLoopOptions;
  #timer: ReturnType<typeof setInterval> | undefined;
  #pending: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void)[] = [];

  constructor(log: Logger, options: PassLoopOptions) {
    this.#log = log;
    this.#o = options;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#unsubscribe = this.#o.wake((delayMs) => this.trigger(delayMs));
    this.#timer = setInterval(() => this.trigger(), this.#o.intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#pending);
    this.#timer = undefined;
    this.#pending = undefined;
    for (const u of this.#unsubscribe) u();
    this.#unsubscribe = [];
  }

  /** Asks for a pass after `delayMs` (soon by default); triggers meanwhile join it. */
  trigger(delayMs = 0): void {
    if (this.#pending !== undefined || this.#timer === undefined) return;
    this.#pending = setTimeout(() => {
      this.#pending = undefined;
      try {
        this.#o.pass();
      } catch (err) {
        this.#log.error(`${this.#o.name} pass failed`, {
          error: String((err as Error)?.stack ?? err),
        });
      }
    }, delayMs);
  }
}
