/**
 * Seals long series into blocks in the background, a few blocks at a time, so that even the
 * first chart of a long run after a restart reads blobs rather than rows (see
 * `db/metric_blocks.ts`). Each step reads at most `blocksPerStep` blocks' worth of rows
 * (about 5 ms a block), then yields to the event loop; with nothing to seal it looks again
 * after `idleMs`.
 */
import { metricBlocks } from "../db/mod.ts";
import type { Context } from "../context.ts";

/** Series taken from one scan of the store for the steps that follow. */
const SERIES_PER_SCAN = 32;

export interface BlockSealerOptions {
  /** @default 4 */
  blocksPerStep?: number;
  /** Pause between steps while there is work. @default 50 */
  busyMs?: number;
  /** Pause before looking again when there was nothing to seal. @default 10_000 */
  idleMs?: number;
}

export class BlockSealer {
  readonly #ctx: Context;
  readonly #blocksPerStep: number;
  readonly #busyMs: number;
  readonly #idleMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #todo: { run_id: string; key: string }[] = [];

  constructor(ctx: Context, options: BlockSealerOptions = {}) {
    this.#ctx = ctx;
    this.#blocksPerStep = options.blocksPerStep ?? 4;
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
   * series) only when it runs out, not at every step.
   */
  runOnce(): number {
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
