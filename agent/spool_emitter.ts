/**
 * How the agent's parts hand frames to the spool: append, and when the spool had to drop
 * system metrics to stay under its cap, say so with a `SPOOL_FULL` event (at most once a
 * minute) so the gap in `sys/*` charts has an explanation.
 */
import type { NewDataFrame } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { Spool } from "./spool.ts";

/** Least time between two SPOOL_FULL events. */
export const SPOOL_FULL_EVENT_MS = 60_000;

/** Returns the `emit` function the agent's parts share. */
export function spoolEmitter(
  spool: Spool,
  options: { log: Logger; now: () => number },
): (frame: NewDataFrame) => Promise<void> {
  let reported = 0;
  let lastEvent = -Infinity;
  return async (frame) => {
    await spool.append(frame);
    const dropped = spool.stats().droppedSys;
    if (dropped <= reported || options.now() - lastEvent < SPOOL_FULL_EVENT_MS) return;
    reported = dropped;
    lastEvent = options.now();
    const capMb = Math.round(spool.maxBytes / 1024 / 1024);
    options.log.warn("spool full: dropping system metrics", { dropped, cap_mb: capMb });
    await spool.append({
      type: "event",
      stream: "data",
      event: {
        type: "SPOOL_FULL",
        severity: "warning",
        message: `The agent's spool reached its ${capMb} MiB cap while the server was away: ` +
          `${dropped} system-metric frames dropped so far (job states, logs, metrics, ` +
          `checkpoints and SDK data are kept)`,
        data: { dropped, cap_mb: capMb },
      },
    });
  };
}
