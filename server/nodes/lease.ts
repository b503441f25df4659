/**
 * When a lost attempt's successor may start (DESIGN "Node liveness"): once the silent node's
 * agent has surely stopped it. The agent stops its own jobs after `fence_after_s` out of
 * contact, then gives them the job's kill grace; a margin covers its once-a-second fence
 * check and the server starting to count a little before it listens.
 *
 * @module
 */
import type { LeaseHold } from "../jobs/transitions.ts";

/** Added to a silent node's lease before its lost jobs' next attempts may start. */
export const LEASE_MARGIN_MS = 5_000;

/**
 * The hold for a lost job of a node silent for `silentMs`: until its lease, the job's grace
 * and the margin have passed, counted from `now`. No lease (`fenceAfterS` null): never by
 * itself, since nothing stops the old copy.
 */
export function leaseHold(
  lease: { fenceAfterS: number | null; graceS: number; marginMs: number },
  silentMs: number,
  now: Date,
): LeaseHold {
  if (lease.fenceAfterS === null) {
    return {
      until: null,
      why: "the node's agent holds no lease (fence_after_s), so nothing stops the old copy",
    };
  }
  const leftMs = lease.fenceAfterS * 1000 + lease.graceS * 1000 + lease.marginMs - silentMs;
  return { until: new Date(now.getTime() + Math.max(0, leftMs)) };
}
