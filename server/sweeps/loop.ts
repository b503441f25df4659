/**
 * The sweep loop: advances running sweeps when jobs change (a trial ended, a slot freed) and
 * as trials log the sweep's metric (a rung reached), and on a slow timer as a backstop.
 */
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { advanceSweeps, type SweepPass } from "./service.ts";

export interface SweepLoopOptions {
  /** @default 5000 */
  intervalMs?: number;
  /** Metric writes wake the loop at most this often. @default 500 */
  metricsDebounceMs?: number;
}

export class SweepLoop {
  #ctx: Context;
  #intervalMs: number;
  #debounceMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #pending: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void)[] = [];

  constructor(ctx: Context, options: SweepLoopOptions = {}) {
    this.#ctx = ctx;
    this.#intervalMs = options.intervalMs ?? 5000;
    this.#debounceMs = options.metricsDebounceMs ?? 500;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#unsubscribe = [
      this.#ctx.bus.subscribe(topics.jobs, () => this.trigger(0)),
      this.#ctx.bus.subscribe(topics.allMetrics, () => this.trigger(this.#debounceMs)),
    ];
    this.#timer = setInterval(() => this.trigger(0), this.#intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#pending);
    this.#timer = undefined;
    this.#pending = undefined;
    for (const u of this.#unsubscribe) u();
    this.#unsubscribe = [];
  }

  /** Asks for a pass after `delayMs`; triggers meanwhile join it. */
  trigger(delayMs: number): void {
    if (this.#pending !== undefined || this.#timer === undefined) return;
    this.#pending = setTimeout(() => {
      this.#pending = undefined;
      try {
        this.runOnce();
      } catch (err) {
        this.#ctx.log.error("sweep pass failed", { error: String((err as Error)?.stack ?? err) });
      }
    }, delayMs);
  }

  /** One pass over the running sweeps; logs only when something happened. */
  runOnce(): SweepPass {
    const pass = advanceSweeps(this.#ctx);
    if (pass.launched || pass.stopped || pass.finished) {
      this.#ctx.log.info("sweeps advanced", { ...pass });
    }
    return pass;
  }
}
