/**
 * The sweep loop: advances running sweeps when jobs change (a trial ended, a slot freed) and
 * as trials log the sweep's metric (a rung reached), and on a slow timer as a backstop.
 */
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { PassLoop } from "../pass_loop.ts";
import { advanceSweeps, type SweepPass } from "./service.ts";

export interface SweepLoopOptions {
  /** @default 5000 */
  intervalMs?: number;
  /** Metric writes wake the loop at most this often. @default 500 */
  metricsDebounceMs?: number;
}

export class SweepLoop {
  #ctx: Context;
  #loop: PassLoop;

  constructor(ctx: Context, options: SweepLoopOptions = {}) {
    this.#ctx = ctx;
    const debounceMs = options.metricsDebounceMs ?? 500;
    this.#loop = new PassLoop(ctx.log, {
      name: "sweep",
      intervalMs: options.intervalMs ?? 5000,
      pass: () => this.runOnce(),
      wake: (trigger) => [
        ctx.bus.subscribe(topics.jobs, () => trigger(0)),
        ctx.bus.subscribe(topics.allMetrics, () => trigger(debounceMs)),
      ],
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): void {
    this.#loop.stop();
  }

  /** Asks for a pass after `delayMs`; triggers meanwhile join it. */
  trigger(delayMs: number): void {
    this.#loop.trigger(delayMs);
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
