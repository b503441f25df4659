/**
 * Seals long series into blocks in the background, a few blocks at a time, so that even the
 * first chart of a long run after a restart reads blobs rather than rows (see
 * `db/metric_blocks.ts`). Each step reads at most `blocksPerStep` blocks' worth of rows
 * (about 5 ms a block), then yields to the event loop; with nothing to seal it looks again
 * after `idleMs`. Blocks are sealed with their summaries; blocks a store sealed before
 * summaries existed get theirs when nothing is left to seal (`summarizeNext`, up to
 * `summariesPerStep` blocks a step, read from the blocks at well under 1 ms each).
 */
import { metricBlocks } from "../db/mod.ts";
import { seriesToSummarize, summarizeNext } from "../db/metric_summaries.ts";
import type { Context } from "../context.ts";

/** Series taken from one scan of the store for the steps that follow. */
const SERIES_PER_SCAN = 32;

export interface BlockSealerOptions {
  /** @default 4 */
  blocksPerStep?: number;
  /** Blocks of an older store summarised in one step. @default 16 */
  summariesPerStep?: number;
  /** Pause between steps while there is work. @default 50 */
  busyMs?: number;
  /** Pause before looking again when there was nothing to seal. @default 10_000 */
  idleMs?: number;
}

export class BlockSealer {
  readonly #ctx: Context;
  readonly #blocksPerStep: number;
  readonly #summariesPerStep: number;
  readonly #busyMs: number;
  readonly #idleMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #todo: { run_id: string; key: string }[] = [];
  #unsummarized: { run_id: string; key: string }[] = [];

  constructor(ctx: Context, options: BlockSealerOptions = {}) {
    this.#ctx = ctx;
    this.#blocksPerStep = options.blocksPerStep ?? 4;
    this.#summariesPerStep = Math.max(1, options.summariesPerStep ?? 16);
    this.#busyMs = options.busyMs ?? 50;
    this.#idleMs = options.idleMs ?? 10_000;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(this.#busyMs);
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * One step: seals up to `blocksPerStep` blocks of the series at the head of the work list,
   * the most unsealed first; returns how many. The list is refilled (one query over the long
   * series) only when it runs out, not at every step. With nothing to seal, summarises up to
   * `summariesPerStep` blocks sealed without a summary instead, and returns how many.
   */
  runOnce(): number {
    return this.#sealStep() || this.#summarizeStep();
  }

  #summarizeStep(): number {
    let refilled = false;
    for (;;) {
      if (this.#unsummarized.length === 0) {
        if (refilled) return 0;
        this.#unsummarized = seriesToSummarize(this.#ctx.db, SERIES_PER_SCAN);
        refilled = true;
        if (this.#unsummarized.length === 0) return 0;
      }
      const next = this.#unsummarized[0];
      const done = summarizeNext(this.#ctx.db, next.run_id, next.key, this.#summariesPerStep);
      if (done < this.#summariesPerStep) this.#unsummarized.shift();
      if (done > 0) return done;
    }
  }

  #sealStep(): number {
    // A series whose last whole block was sealed by the previous step seals nothing now: go on
    // to the next one rather than answer 0, which would read as "no work" and idle the loop.
    // Each turn seals or drops a series, and the list is refilled at most once: bounded.
    let refilled = false;
    for (;;) {
      if (this.#todo.length === 0) {
        if (refilled) return 0;
        this.#todo = metricBlocks.seriesToSeal(this.#ctx.db, SERIES_PER_SCAN);
        refilled = true;
        if (this.#todo.length === 0) return 0;
      }
      const next = this.#todo[0];
      const sealed = metricBlocks.sealNext(
        this.#ctx.db,
        next.run_id,
        next.key,
        this.#blocksPerStep,
      );
      if (sealed < this.#blocksPerStep) this.#todo.shift(); // no whole block left in it
      if (sealed > 0) return sealed;
    }
  }

  #schedule(ms: number): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      let sealed = 0;
      try {
        sealed = this.runOnce();
      } catch (err) {
        // A full disk or a busy file: the rows stay the record, the next step tries again.
        this.#ctx.log.warn("sealing metric blocks failed", { error: String(err) });
      }
      this.#schedule(sealed > 0 ? this.#busyMs : this.#idleMs);
    }, ms);
  }
}
